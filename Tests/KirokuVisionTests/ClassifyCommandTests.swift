import Foundation
import KirokuTestSupport
import Testing

@Suite("kiroku classify", .subprocesses)
struct ClassifyCommandTests {
    @Test("classifies the photos, reports each bad file on its own line, and exits 1 at the end")
    func classify() async throws {
        let photos = try VisionFixtures.photos().map { VisionFixtures.directory.appendingPathComponent("photos/\($0)").path }
        let truncated = VisionFixtures.directory.appendingPathComponent("cases/truncated_50.jpg").path
        let png = VisionFixtures.directory.appendingPathComponent("cases/image.png").path
        let run = try await KirokuProcess.run(["classify", "--json", "--top", "2", "--model", VisionFixtures.model.path,
                                         photos[0], truncated, photos[1], png])
        #expect(run.status == 1)
        let lines = try run.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        #expect(lines.count == 4)
        #expect(lines.map { $0["file"] as? String } == [photos[0], truncated, photos[1], png])
        for index in [0, 2] {
            let top = lines[index]["top"] as? [[String: Any]]
            #expect(top?.count == 2 && top?.first?["label"] is String && top?.first?["index"] is Int && top?.first?["score"] is Double)
            #expect(lines[index]["food"] is Bool && lines[index]["error"] == nil)
        }
        #expect((lines[1]["error"] as? String)?.contains("truncated") == true)
        #expect((lines[3]["error"] as? String)?.contains("unsupported image format: PNG") == true)
    }

    @Test("a dish is food, a rocket is not")
    func foodVerdict() async throws {
        let coffee = VisionFixtures.directory.appendingPathComponent("photos/coffee.jpg").path
        let rocket = VisionFixtures.directory.appendingPathComponent("photos/rocket.jpg").path
        let run = try await KirokuProcess.run(["classify", "--model", VisionFixtures.model.path, coffee, rocket])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.first?.contains(": food") == true, "\(run.stdout)")
        #expect(lines.last?.contains(": not food") == true, "\(run.stdout)")
    }
}
