import Foundation
import KirokuInference
import KirokuVision

/// The files `make test` generates with scripts/make-vision-fixtures.py under .kiroku/vision-fixtures.
enum VisionFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let directory = root.appendingPathComponent(".kiroku/vision-fixtures")
    static let model = root.appendingPathComponent("models/efficientnet-lite0.onnx")

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(path).path) else {
            throw Missing(description: "\(path) is missing under \(directory.path): run `make test` (it runs scripts/make-vision-fixtures.py)")
        }
        return Array(data)
    }

    static func photos() throws -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("photos").path)) ?? []
        guard !names.isEmpty else { throw Missing(description: "no photos under \(directory.path): run `make test`") }
        return names.filter { $0.hasSuffix(".jpg") }.sorted()
    }

    static func reference() throws -> [String: (top1: Int, pixels: [Int])] {
        let object = try JSONSerialization.jsonObject(with: Data(try bytes("reference.json"))) as? [String: [String: Any]] ?? [:]
        return object.mapValues { (($0["top1"] as? Int) ?? -1, ($0["pixels"] as? [Int]) ?? []) }
    }
}
