import Foundation
@testable import KirokuInference
import KirokuTestSupport
import SwiftProtobuf
import Testing

@Suite("kiroku quantize", .subprocesses)
struct QuantizeCommandTests {
    static func photos() throws -> [String] {
        try VisionFixtures.photos().map { VisionFixtures.directory.appendingPathComponent("photos/\($0)").path }
    }

    static func report(_ stdout: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] ?? [:]
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-quantize-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("calibrates on half the photos, checks the other half, and writes an int8 QDQ model with its sidecar that classify runs")
    func quantize() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("lite0.int8.onnx")
        let photos = try Self.photos()
        // The default recipe and the default floor (98% on the decision and on the decisive photos' top-1).
        let run = try await KirokuProcess.run(["quantize", "--json", "--model", VisionFixtures.model.path,
                                         "--calibrate", VisionFixtures.directory.appendingPathComponent("photos").path, "--output", output.path])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try Self.report(run.stdout)
        #expect(report["written"] as? Bool == true)
        #expect(report["calibration_images"] as? Int == (photos.count + 1) / 2)
        #expect(report["held_out_images"] as? Int == photos.count / 2)
        let acceptance = report["acceptance"] as? [String: Any] ?? [:]
        let decision = acceptance["decision"] as? [String: Any] ?? [:], decisive = acceptance["decisive_top1"] as? [String: Any] ?? [:]
        #expect(decision["trials"] as? Int == photos.count / 2 && decision["successes"] as? Int == photos.count / 2, "\(acceptance)")
        #expect((decisive["trials"] as? Int ?? 0) >= 1 && decisive["rate"] as? Double == 1, "\(acceptance)")
        #expect((decision["low"] as? Double ?? 1) < 1 && (decisive["low"] as? Double ?? 1) < 1, "an interval, not a point")
        let mse = acceptance["mean_squared_logit_difference"] as? [String: Any] ?? [:]
        let (mean, low, high) = (mse["mean"] as? Double ?? -1, mse["low"] as? Double ?? -1, mse["high"] as? Double ?? -1)
        #expect(mean > 0 && low >= 0 && low <= mean && mean < high && mse["count"] as? Int == photos.count / 2, "\(mse)")
        #expect(acceptance["decisive_margin"] as? Double == 0.1 && (acceptance["shortfalls"] as? [String])?.isEmpty == true)
        #expect((report["quantized_activations"] as? Int ?? 0) > 0)
        // Both models timed on this host, alternated: the ratio is of the two medians reported.
        let speed = report["speed"] as? [String: Any] ?? [:]
        let (floatMs, int8Ms) = (speed["float_ms_per_image"] as? Double ?? 0, speed["int8_ms_per_image"] as? Double ?? 0)
        #expect(floatMs > 0 && int8Ms > 0, "\(speed)")
        #expect(abs((speed["speed_up"] as? Double ?? 0) - floatMs / max(int8Ms, 1e-9)) < 1e-9, "\(speed)")
        #expect(speed["runs"] as? Int == 20 && (speed["threads"] as? Int ?? 0) >= 1 && speed["kernels"] is String, "\(speed)")

        let model = try Model(contentsOf: output)
        #expect(model.precision == .int8QDQ)
        let size = { (url: URL) in (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0 }
        let (quantizedSize, floatSize) = (try size(output), try size(VisionFixtures.model))
        #expect(quantizedSize * 3 < floatSize, "int8 weights take a quarter of the float ones")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("lite0.int8.json").path))

        let coffee = VisionFixtures.directory.appendingPathComponent("photos/coffee.jpg").path
        let top1 = { (model: String) async throws -> Int? in
            let classified = try await KirokuProcess.run(["classify", "--json", "--top", "1", "--model", model, coffee])
            return ((try Self.report(classified.stdout)["top"] as? [[String: Any]])?.first?["index"]) as? Int
        }
        let (quantized, float) = (try await top1(output.path), try await top1(VisionFixtures.model.path))
        #expect(quantized != nil && quantized == float)
    }

    @Test("refuses to write a model under the agreement floor unless forced")
    func agreementFloor() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("bad.int8.onnx")
        // With --held-out 50 the 1x1 image (first) calibrates alone (--images 1); the photos at odd places are held out.
        let tiny = VisionFixtures.directory.appendingPathComponent("cases/tiny_1x1.jpg").path
        let arguments = ["quantize", "--json", "--model", VisionFixtures.model.path, "--images", "1",
                         "--calibrate", tiny] + (try Self.photos()) + ["--output", output.path]
        let refused = try await KirokuProcess.run(arguments + ["--speed-runs", "0"])
        #expect(refused.status == 1)
        let report = try Self.report(refused.stdout)
        #expect(report["written"] as? Bool == false)
        #expect(report["calibration_images"] as? Int == 1)
        #expect((report["top1_agreement"] as? Double ?? 100) < 98, "\(report)")
        let misses = report["disagreements"] as? [[String: Any]] ?? []
        #expect(!misses.isEmpty)
        #expect(misses.allSatisfy { miss in
            ["float", "float_runner_up", "int8"].allSatisfy { ((miss[$0] as? [String: Any])?["label"] as? String) != nil } && miss["file"] is String
        })
        // The float model's runner-up scores no more than its top class.
        #expect(misses.allSatisfy { miss in
            let score = { (key: String) in (miss[key] as? [String: Any])?["score"] as? Double ?? .nan }
            return score("float_runner_up") <= score("float")
        })
        #expect(!FileManager.default.fileExists(atPath: output.path))

        let forced = try await KirokuProcess.run(arguments.filter { $0 != "--json" } + ["--force", "--speed-runs", "2"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(FileManager.default.fileExists(atPath: output.path))
        #expect(forced.stdout.contains("kernels, ") && forced.stdout.contains("2 alternated runs each): int8 ")
                && forced.stdout.contains("x the float model's speed"), "\(forced.stdout)")
    }

    /// The default model with an outlier weight of 1000 on the first feature in every row of its
    /// classifier: the float model classifies as before (the same amount added to every logit),
    /// while rounding each row to 8 bits with that outlier in its range sets every other weight to 0.
    static func outlierModel(in directory: URL) throws -> URL {
        var proto = try Onnx_ModelProto(serializedBytes: try Data(contentsOf: VisionFixtures.model))
        let index = try #require(proto.graph.initializer.firstIndex { $0.name == "_fc.weight" })
        var weights = proto.graph.initializer[index].rawData.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let columns = Int(proto.graph.initializer[index].dims[1])
        for row in 0..<(weights.count / columns) { weights[row * columns] = 1000 }
        proto.graph.initializer[index].rawData = weights.withUnsafeBufferPointer { Data(buffer: $0) }
        let model = directory.appendingPathComponent("outlier.onnx")
        try proto.serializedData().write(to: model)
        try FileManager.default.copyItem(at: VisionFixtures.model.deletingPathExtension().appendingPathExtension("json"),
                                        to: directory.appendingPathComponent("outlier.json"))
        return model
    }

    @Test("a model whose rounding really breaks it (an outlier weight in every classifier row) is refused on the decision and the decisive top-1")
    func roundingBreaks() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.outlierModel(in: directory), output = directory.appendingPathComponent("outlier.int8.onnx")
        let photos = VisionFixtures.directory.appendingPathComponent("photos").path
        let float = try await KirokuProcess.run(["classify", "--json", "--top", "1", "--model", model.path, photos + "/coffee.jpg"])
        let original = try await KirokuProcess.run(["classify", "--json", "--top", "1", "--model", VisionFixtures.model.path, photos + "/coffee.jpg"])
        let top = { (run: KirokuProcess.Output) in ((try? Self.report(run.stdout))?["top"] as? [[String: Any]])?.first?["index"] as? Int }
        #expect(top(float) != nil && top(float) == top(original), "the outlier leaves the float model's answer alone")

        let run = try await KirokuProcess.run(["quantize", "--json", "--model", model.path, "--calibrate", photos, "--output", output.path,
                                               "--speed-runs", "0"])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try Self.report(run.stdout)
        let acceptance = report["acceptance"] as? [String: Any] ?? [:]
        #expect(report["written"] as? Bool == false && !FileManager.default.fileExists(atPath: output.path))
        #expect(((acceptance["decisive_top1"] as? [String: Any])?["rate"] as? Double ?? 1) < 0.5, "\(acceptance)")
        #expect(((acceptance["mean_squared_logit_difference"] as? [String: Any])?["mean"] as? Double ?? 0) > 1, "\(acceptance)")
        let shortfalls = acceptance["shortfalls"] as? [String] ?? []
        #expect(shortfalls.contains { $0.hasPrefix("top-1 agrees on") }, "\(shortfalls)")
    }

    @Test("--sensitivity ranks every layer still quantized by the output error left when it alone stays float")
    func sensitivity() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let photos = Array(try Self.photos().prefix(3))
        let run = try await KirokuProcess.run(["quantize", "--json", "--model", VisionFixtures.model.path, "--images", "1", "--force",
                                               "--speed-runs", "0", "--threads", "1", "--sensitivity", "--keep-float", "Gemm", "--calibrate"] + photos
                                              + ["--output", directory.appendingPathComponent("lite0.int8.onnx").path])
        #expect(run.status == 0, "\(run.stderr)")
        let sensitivity = try Self.report(run.stdout)["sensitivity"] as? [String: Any] ?? [:]
        #expect(sensitivity["photos"] as? Int == 1)
        let layers = sensitivity["layers"] as? [[String: Any]] ?? []
        let errors = layers.map { $0["mean_squared_output_difference"] as? Double ?? -1 }
        // EfficientNet-Lite0's 49 convolutions; its Gemm is kept float already.
        #expect(layers.count == 49 && Set(layers.compactMap { $0["node"] as? String }).count == 49)
        #expect(layers.allSatisfy { $0["op_type"] as? String == "Conv" })
        #expect(errors.allSatisfy { $0 >= 0 } && errors == errors.sorted(), "\(errors)")
        #expect((sensitivity["baseline"] as? Double ?? 0) > 0)
        // In text (one thread, as above: the same sums), the ten that cost most, and the flags that leave the first two float too.
        let text = try await KirokuProcess.run(["quantize", "--model", VisionFixtures.model.path, "--images", "1", "--force",
                                                "--speed-runs", "0", "--threads", "1", "--sensitivity", "--keep-float", "Gemm", "--calibrate"] + photos
                                               + ["--output", directory.appendingPathComponent("lite0.int8.onnx").path])
        let first = layers.prefix(2).compactMap { $0["node"] as? String }
        #expect(text.stdout.contains("to leave the first two float as well: --keep-float Gemm \(first.joined(separator: " "))"), "\(text.stdout)")
        #expect(text.stdout.split(separator: "\n").filter { $0.hasPrefix("  0.") }.count == 10, "\(text.stdout)")
    }

    @Test("--target-mse leaves float the fewest layers in --sensitivity's order until the calibration photos' error meets it, and times each")
    func mixedPrecision() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let photos = VisionFixtures.directory.appendingPathComponent("photos").path
        func quantize(_ target: String) async throws -> [String: Any] {
            let run = try await KirokuProcess.run(["quantize", "--json", "--model", VisionFixtures.model.path, "--calibrate", photos,
                                                   "--images", "4", "--speed-runs", "0", "--threads", "1", "--target-mse", target,
                                                   "--output", directory.appendingPathComponent("lite0.int8.onnx").path])
            #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
            return try Self.report(run.stdout)
        }
        // A third of the error with every layer int8: a few layers go float, the most sensitive first.
        let report = try await quantize("0.004")
        let mixed = try #require(report["mixed_precision"] as? [String: Any])
        let layers = mixed["layers"] as? [[String: Any]] ?? []
        let ranking = ((report["sensitivity"] as? [String: Any])?["layers"] as? [[String: Any]] ?? []).compactMap { $0["node"] as? String }
        let (baseline, achieved) = (mixed["baseline"] as? Double ?? 0, mixed["achieved"] as? Double ?? 1)
        #expect(baseline > 0.004 && achieved <= 0.004 && mixed["met"] as? Bool == true, "\(mixed)")
        #expect(!layers.isEmpty && layers.compactMap { $0["node"] as? String } == Array(ranking.prefix(layers.count)), "\(layers) \(ranking)")
        let errors = layers.compactMap { $0["mean_squared_output_difference"] as? Double }
        #expect(errors.last == achieved && errors.dropLast().allSatisfy { $0 > 0.004 }, "the fewest: every layer before the last left the target unmet")
        #expect(layers.allSatisfy { ($0["ms_per_image"] as? Double ?? 0) > 0 } && (mixed["baseline_ms_per_image"] as? Double ?? 0) > 0)
        #expect(report["kept_float"] as? [String] == layers.compactMap { $0["node"] as? String })
        // Then the held-out photos confirm it, or the model is not written and the report says why.
        let heldOut = ((report["acceptance"] as? [String: Any])?["mean_squared_logit_difference"] as? [String: Any])?["mean"] as? Double ?? 1
        let shortfalls = (report["acceptance"] as? [String: Any])?["shortfalls"] as? [String] ?? []
        #expect(report["written"] as? Bool == (heldOut <= 0.004 && shortfalls.isEmpty), "\(heldOut) \(shortfalls)")
        #expect(heldOut <= 0.004 || shortfalls.contains { $0.hasPrefix("the held-out photos do not confirm --target-mse") }, "\(shortfalls)")

        // A target the int8 model already meets leaves every layer on integer kernels.
        let loose = try #require(try await quantize("1")["mixed_precision"] as? [String: Any])
        #expect((loose["layers"] as? [Any])?.isEmpty == true && loose["met"] as? Bool == true, "\(loose)")
    }

    @Test("a photo that cannot be read is skipped by name and the rest calibrate; bad flags say what to fix")
    func badInput() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("lite0.int8.onnx")
        let truncated = VisionFixtures.directory.appendingPathComponent("cases/truncated_50.jpg").path
        let photos = try Self.photos()
        let run = try await KirokuProcess.run(["quantize", "--json", "--model", VisionFixtures.model.path, "--min-agreement", "0", "--speed-runs", "0",
                                         "--keep-float", "Gemm", "--calibrate", truncated] + photos + ["--output", output.path])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try Self.report(run.stdout)
        #expect(report["kept_float"] as? [String] == ["Gemm"])
        #expect(report["speed"] == nil, "--speed-runs 0 skips the speed check")
        #expect(report["skipped_files"] as? [String] == [truncated])
        #expect(report["calibration_images"] as? Int == (photos.count + 2) / 2 - 1)
        #expect(run.stderr.contains("skipping \(truncated)"))

        for (flags, message) in [(["--min-agreement", "150"], "--min-agreement must be a percent"),
                                 (["--weight-bits", "4"], "--weight-bits must be 8 or 7"),
                                 (["--speed-runs=-1"], "--speed-runs must be 0"),
                                 (["--activations", "int4"], "int4"),
                                 (["--keep-float", "Gemm", "_no_such_node"], "--keep-float: '_no_such_node' names no quantized node"),
                                 (["--keep-float", "Conv", "Gemm", "Add", "GlobalAveragePool"], "--keep-float leaves nothing of model")] {
            let bad = try await KirokuProcess.run(["quantize", "--model", VisionFixtures.model.path, "--calibrate", photos[0],
                                             "--output", output.path] + flags)
            #expect(bad.status == 2)
            #expect(bad.stderr.contains(message), "\(bad.stderr)")
        }
        let quantized = try await KirokuProcess.run(["quantize", "--model", output.path, "--calibrate"] + photos
                                              + ["--output", directory.appendingPathComponent("twice.onnx").path])
        #expect(quantized.status == 1)
        #expect(quantized.stderr.contains("already quantized"), "\(quantized.stderr)")
    }
}
