import Foundation
import KirokuInference
import KirokuTestSupport
import Testing

@Suite("kiroku infer", .subprocesses)
struct InferCommandTests {
    let fixture = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent("net_classifier_head")

    @Test("runs a .npy tensor through a model and writes ONNX Runtime's answer")
    func infer() async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-infer-\(UUID().uuidString).npy")
        defer { try? FileManager.default.removeItem(at: output) }
        let run = try await KirokuProcess.run(["infer", "--model", fixture.appendingPathComponent("model.onnx").path,
                                         "--input", fixture.appendingPathComponent("input_0.npy").path, "--output", output.path])
        #expect(run.status == 0, "\(run.stderr)")
        let result = try NumpyFile.read(Array(try Data(contentsOf: output)))
        let expected = try NumpyFile.read(Array(try Data(contentsOf: fixture.appendingPathComponent("expected_0.npy"))))
        #expect(result.shape == expected.shape)
        #expect(zip(result.data, expected.data).allSatisfy { abs($0 - $1) < 1e-5 })
    }

    @Test("a tensor of the wrong shape or a missing file is a clear error")
    func errors() async throws {
        let model = fixture.appendingPathComponent("model.onnx").path
        let wrong = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-wrong-\(UUID().uuidString).npy")
        defer { try? FileManager.default.removeItem(at: wrong) }
        try Data(NumpyFile.write(Tensor(zeros: [2, 3]))).write(to: wrong)
        let badShape = try await KirokuProcess.run(["infer", "--model", model, "--input", wrong.path, "--output", "/tmp/unused.npy"])
        #expect(badShape.status == 1 && badShape.stderr.contains("takes inputs [[2, 4, 5, 5]]"), "\(badShape.stderr)")
        let missing = try await KirokuProcess.run(["infer", "--model", model, "--input", "/nonexistent.npy", "--output", "/tmp/unused.npy"])
        #expect(missing.status == 2 && missing.stderr.contains("/nonexistent.npy"))
    }
}
