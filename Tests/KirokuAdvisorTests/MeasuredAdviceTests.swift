import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku advise from a real database")
struct MeasuredAdviceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("after a worker run: its measured speed and instance type size the pool; a pool without measurements is named, not sized")
    func measured() throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let photos = Self.root.appendingPathComponent(".kiroku/vision-fixtures/photos").path
        let catalog = Self.root.appendingPathComponent("catalog/instances.json").path
        let model = Self.root.appendingPathComponent("models/efficientnet-lite0.onnx").path
        for _ in 0..<2 {
            #expect(try KirokuProcess.run(["enqueue", "--no-idempotency-key", photos], databaseURL: url).status == 0)
        }
        let lock = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-advise-\(UUID().uuidString.prefix(8)).lock").path
        let worker = try KirokuProcess.run(["worker", "--once", "--http-port", "0", "--lock-file", lock, "--model", model,
                                            "--instance-type", "c5.large"], databaseURL: url)
        #expect(worker.status == 0, "\(worker.stderr)")
        #expect(try KirokuProcess.run(["enqueue", "--no-idempotency-key", "--pool", "gpu", photos], databaseURL: url).status == 0)

        let speed = try connection.query("SELECT instance_type, images_per_second FROM kiroku.workers").single("worker")
        #expect(try speed.optionalString("instance_type") == "c5.large")
        let rate = try #require(try speed.optionalDouble("images_per_second"))
        #expect(rate > 0)

        let run = try KirokuProcess.run(["advise", "--json", "--wait-target", "200ms", "--catalog", catalog], databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        let advice = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(advice["mode"] as? String == "measured")
        let pools = advice["pools"] as? [[String: Any]] ?? []
        #expect(pools.count == 1)
        let cpu = pools.first ?? [:]
        #expect(cpu["instance_type"] as? String == "c5.large" && cpu["service_time_estimated"] as? Bool == false)
        let observation = cpu["observation"] as? [String: Any] ?? [:]
        #expect(observation["pool"] as? String == "cpu")
        #expect(abs((observation["service_time"] as? Double ?? 0) - 1 / rate) < 1e-9)
        #expect(observation["current_instances"] as? Int == 0, "the --once worker has stopped")
        #expect((observation["arrival_rate"] as? Double ?? 0) > 0)
        #expect(advice["recommended_instances"] as? Int == (cpu["sizing"] as? [String: Any])?["recommended"] as? Int)
        let notes = advice["notes"] as? [String] ?? []
        #expect(notes.contains { $0.hasPrefix("pool gpu:") && $0.contains("no service time measured") }, "\(notes)")

        let text = try KirokuProcess.run(["advise", "--catalog", catalog], databaseURL: url)
        #expect(text.status == 0 && text.stdout.contains("Pool cpu:") && text.stdout.contains("erlang_c"), "\(text.stdout)")
    }
}
