import Foundation
import KirokuInference
import Testing

/// QDQ models from ONNX Runtime's quantize_static (scripts/make-inference-fixtures.py --quantized)
/// against ONNX Runtime's outputs for the operators' own semantics (no graph optimisation): weights
/// dequantized at load, every QuantizeLinear → DequantizeLinear pair rounded as ONNX specifies.
@Suite("Quantized (QDQ) models against ONNX Runtime")
struct QuantizedReferenceTests {
    static let all = ReferenceCase.cases(in: Bundle.module.url(forResource: "QuantizedFixtures", withExtension: nil))

    @Test("the quantized fixtures are present")
    func fixturesPresent() {
        #expect(Self.all.count >= 2, "regenerate with scripts/make-inference-fixtures.py --quantized")
    }

    @Test("each QDQ model matches ONNX Runtime within one quantization step of its output, with every kernel build, on 1 and 2 threads",
          arguments: all)
    func matchesOnnxRuntime(_ reference: ReferenceCase) throws {
        let expected = try reference.expected()
        for (threads, kernels, outputs) in try reference.runs(threads: [1, 2]) {
            #expect(outputs.count == expected.count && !expected.isEmpty)
            for (index, (output, wanted)) in zip(outputs, expected).enumerated() {
                #expect(output.shape == wanted.shape, "\(reference.name): shape of output \(index)")
                let step = try reference.tensor("step_\(index).npy").data[0]
                let differences = zip(output.data, wanted.data).map { abs($0 - $1) / step }
                // A value a hair from a rounding boundary may land one level over where float sums
                // are added in another order; every other value is the same level.
                #expect(differences.max() ?? .infinity <= 1.001,
                        "\(reference.name), \(kernels) kernels, \(threads) threads: \(differences.max() ?? 0) steps apart")
                let shifted = differences.filter { $0 > 0.001 }.count
                #expect(shifted * 20 <= differences.count, "\(reference.name): \(shifted) of \(differences.count) values a level apart")
            }
        }
    }

    @Test("weights are dequantized at load and each QuantizeLinear → DequantizeLinear pair runs as one step or in a convolution's epilogue")
    func pairsFused() throws {
        let model = try #require(Self.all.first).model()
        let steps = try InferenceSession(model: model, threads: 1).steps
        #expect(!steps.contains { $0.op == "QuantizeLinear" || $0.op == "DequantizeLinear" }, "\(steps)")
        let convolutions = steps.filter { $0.op == "Conv" }.count, pairs = steps.filter { $0.op == "kiroku.QuantizeDequantize" }.count
        #expect(convolutions == 4 && pairs > 0, "\(steps)")
    }
}
