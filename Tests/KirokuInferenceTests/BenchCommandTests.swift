import Foundation
import KirokuInference
import KirokuTestSupport
import Testing

@Suite("kiroku bench", .subprocesses)
struct BenchCommandTests {
    let model = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!
        .appendingPathComponent("net_mobile_block").appendingPathComponent("model.onnx").path

    @Test("--json names the kernel build; --profile --steps lists every step in order")
    func profileAndJSON() async throws {
        let json = try await KirokuProcess.run(["bench", "--model", model, "--runs", "100", "--threads", "1", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(report?["kernels"] as? String == KernelSet.detected.rawValue)
        #expect((report?["ms_per_image_p50"] as? Double ?? 0) > 0)

        let profile = try await KirokuProcess.run(["bench", "--model", model, "--runs", "100", "--profile", "--steps"])
        #expect(profile.status == 0, "\(profile.stderr)")
        let steps = profile.stdout.split(separator: "\n").filter { $0.contains(" ms  ") && $0.contains("node") }
        let session = try InferenceSession(model: try Model(contentsOf: URL(fileURLWithPath: model)))
        #expect(steps.count == session.steps.count, "\(profile.stdout)")
        #expect(zip(steps, session.steps).allSatisfy { $0.hasSuffix($1.label) })
    }

    @Test("--json and the header say which precision ran: fp32, or a QDQ model with how many of its layers this CPU runs on integer kernels")
    func precision() async throws {
        let quantized = Bundle.module.url(forResource: "QuantizedFixtures", withExtension: nil)!
            .appendingPathComponent("qdq_classifier_uint8").appendingPathComponent("model.onnx").path
        // The quantized fixture's batch is fixed at 2; --integer-layers all makes its choice fixed.
        for (path, batch, flags, expected) in [(model, "1", [], "fp32"),
                                               (quantized, "2", ["--integer-layers", "all"],
                                                "int8-qdq, 6 of 6 quantized layers on integer kernels (100% of multiply-adds), as told (all)")] {
            let arguments = ["bench", "--model", path, "--batch", batch, "--runs", "5", "--threads", "1"] + flags
            let json = try await KirokuProcess.run(arguments + ["--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(report?["precision"] as? String == expected, "\(json.stdout)")
            #expect((report?["integer_layers"] as? [String: Any])?["integer"] as? Int == (path == model ? nil : 6), "\(json.stdout)")
            let text = try await KirokuProcess.run(arguments)
            #expect(text.stdout.split(separator: "\n").first?.contains(", \(expected), 5 runs") == true, "\(text.stdout)")
        }
        // Measured (the default): the timings behind the choice are in the report.
        let measured = try await KirokuProcess.run(["bench", "--model", quantized, "--batch", "2", "--runs", "5", "--threads", "1", "--json"])
        let layers = (try JSONSerialization.jsonObject(with: Data(measured.stdout.utf8)) as? [String: Any])?["integer_layers"] as? [String: Any]
        #expect(layers?["chosen_by"] as? String == "measured" && (layers?["timing"] as? [String: Any])?["all_float"] is Double, "\(measured.stdout)")
    }

    @Test("--steps without --profile says what to add")
    func stepsNeedProfile() async throws {
        let run = try await KirokuProcess.run(["bench", "--model", model, "--steps"])
        #expect(run.status != 0 && run.stderr.contains("--steps goes with --profile"), "\(run.stderr)")
    }
}
