import Foundation
import KirokuInference
import KirokuTestSupport
import Testing

@Suite("kiroku bench")
struct BenchCommandTests {
    let model = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!
        .appendingPathComponent("net_mobile_block").appendingPathComponent("model.onnx").path

    @Test("--json names the kernel build; --profile --steps lists every step in order")
    func profileAndJSON() throws {
        let json = try KirokuProcess.run(["bench", "--model", model, "--runs", "100", "--threads", "1", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(report?["kernels"] as? String == KernelSet.detected.rawValue)
        #expect((report?["ms_per_image_p50"] as? Double ?? 0) > 0)

        let profile = try KirokuProcess.run(["bench", "--model", model, "--runs", "100", "--profile", "--steps"])
        #expect(profile.status == 0, "\(profile.stderr)")
        let steps = profile.stdout.split(separator: "\n").filter { $0.contains(" ms  ") && $0.contains("node") }
        let session = try InferenceSession(model: try Model(contentsOf: URL(fileURLWithPath: model)))
        #expect(steps.count == session.steps.count, "\(profile.stdout)")
        #expect(zip(steps, session.steps).allSatisfy { $0.hasSuffix($1.label) })
    }

    @Test("--steps without --profile says what to add")
    func stepsNeedProfile() throws {
        let run = try KirokuProcess.run(["bench", "--model", model, "--steps"])
        #expect(run.status != 0 && run.stderr.contains("--steps goes with --profile"), "\(run.stderr)")
    }
}
