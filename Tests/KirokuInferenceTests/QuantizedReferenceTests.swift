import Foundation
import KirokuInference
import Testing

/// QDQ models from ONNX Runtime's quantize_static (scripts/make-inference-fixtures.py --quantized
/// Tests/KirokuInferenceTests/QuantizedFixtures) against ONNX Runtime's outputs for the operators'
/// own semantics (no graph optimisation), run on Kiroku's integer kernels: int32 sums of int16
/// products are exact, and the requantization rounds as ONNX's QuantizeLinear does, so a value may
/// differ only where a float sum lands a hair from a rounding boundary.
@Suite("Quantized (QDQ) models against ONNX Runtime")
struct QuantizedReferenceTests {
    static let all = ReferenceCase.cases(in: Bundle.module.url(forResource: "QuantizedFixtures", withExtension: nil))

    @Test("the quantized fixtures are present")
    func fixturesPresent() {
        #expect(Self.all.count >= 6, "regenerate with scripts/make-inference-fixtures.py --quantized Tests/KirokuInferenceTests/QuantizedFixtures")
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
                // Levels are counted on quantized outputs (every value a whole number of steps); a
                // float output (the step its tolerance) differs in the last bits with the sgemm build.
                let quantized = wanted.data.allSatisfy { abs($0 / step - ($0 / step).rounded()) < 0.01 }
                let shifted = differences.filter { $0 > 0.001 }.count
                #expect(!quantized || shifted * 20 <= differences.count, "\(reference.name): \(shifted) of \(differences.count) values a level apart")
            }
        }
    }

    @Test("every build's integer kernels (portable, AVX2, VNNI) give the same output bit for bit (integer sums, the same float requantization)",
          arguments: all)
    func buildsAgree(_ reference: ReferenceCase) throws {
        let runs = try reference.runs(threads: [1, 2])
        for run in runs.dropFirst() {
            for (index, (output, first)) in zip(run.outputs, runs[0].outputs).enumerated() {
                // A float output after a float layer (the builds' float products add in their own
                // order) agrees to its tolerance; every quantized output bit for bit.
                let step = try reference.tensor("step_\(index).npy").data[0]
                let quantized = first.data.allSatisfy { abs($0 / step - ($0 / step).rounded()) < 0.01 }
                let apart = zip(output.data, first.data).map { abs($0 - $1) }.max() ?? 0
                #expect(quantized ? output.data == first.data : apart <= step,
                        "\(reference.name) output \(index): \(run.kernels) on \(run.threads) threads differs from \(runs[0].kernels) on \(runs[0].threads) by \(apart)")
            }
        }
    }

    @Test("odd channel counts, a 5x5 stride-2 depthwise over channels that are not whole groups of 16, a dilated 3x3 and a MatMul all run on integer kernels")
    func kernelShapes() throws {
        let reference = try #require(Self.all.first { $0.name == "qdq_kernel_shapes_uint8" })
        let steps = try InferenceSession(model: try reference.model(), threads: 1, kernels: .avx2, integerLayers: .all).steps
        #expect(!steps.contains { ["Conv", "MatMul", "QuantizeLinear", "DequantizeLinear"].contains($0.op) }, "\(steps)")
        let integer = steps.filter { $0.op == "kiroku.IntegerConvolution" }.map { $0.variant ?? "" }
        #expect(integer == ["int8 rows 1x1/1", "int8 depthwise 5x5/2", "int8 unrolled 3x3/1", "int8 rows 1x1/1"], "\(steps)")
    }

    @Test("every depthwise layer of the depthwise paths' fixture (windows of 3x3, 5x5, 2x3, dilated 3x3 and 7x7/2 over 40 channels) runs on integer kernels")
    func depthwisePaths() throws {
        let reference = try #require(Self.all.first { $0.name == "qdq_depthwise_paths_int8" })
        for kernels in KernelSet.supported() {
            let steps = try InferenceSession(model: try reference.model(), threads: 1, kernels: kernels, integerLayers: .all).steps
            let integer = steps.filter { $0.op == "kiroku.IntegerConvolution" }.compactMap(\.variant).filter { $0.contains("depthwise") }
            #expect(integer == ["int8 depthwise 3x3/1", "int8 depthwise 5x5/1", "int8 depthwise 2x3/1", "int8 depthwise 3x3/1",
                                "int8 depthwise 7x7/2"], "\(kernels): \(steps)")
        }
    }

    /// The steps fixture `name` compiles to on `kernels` (1 thread, every quantized layer integer)
    /// and its integer convolutions' variants (" vnni" left out: the same with and without it).
    static func integerSteps(_ name: String, kernels: KernelSet) throws -> (steps: [StepDescription], integer: [String]) {
        let reference = try #require(all.first { $0.name == name })
        let steps = try InferenceSession(model: try reference.model(), threads: 1, kernels: kernels, integerLayers: .all).steps
        return (steps, steps.filter { $0.op == "kiroku.IntegerConvolution" }.compactMap(\.variant).map { $0.replacingOccurrences(of: " vnni", with: "") })
    }

    @Test("with 8-bit products (VNNI), every convolution of the direct fixture runs direct: 3x3 at strides 1 and 2 with asymmetric pads and a SiLU, dilated to floats, a 5x5, a 2x2 of 4 positions, a 3x3 whose tiles split between threads, and a 3x3 over an image's 3 channels (as 4); without them, unrolled")
    func directWindows() throws {
        for kernels in KernelSet.supported() {
            let (_, integer) = try Self.integerSteps("qdq_direct_windows", kernels: kernels)
            let method = kernels == .vnni ? "direct" : "unrolled"
            #expect(integer == ["int8 \(method) 3x3/1", "int8 \(method) 3x3/2 + silu", "int8 \(method) 3x3/1 to float", "int8 \(method) 5x5/1",
                                "int8 \(method) 2x2/16", "int8 \(method) 3x3/10"], "\(kernels): \(integer)")
            // An image's three channels as four (weights of zero for the fourth): direct too.
            let (_, image) = try Self.integerSteps("qdq_maxpool_padding", kernels: kernels)
            #expect(image.first == "int8 \(method) 3x3/1", "\(kernels): \(image)")
        }
    }

    @Test("every grouped convolution of the grouped fixture (groups of 4, 16 and 8 channels, of 20 outputs, a grouped 1x1, a depthwise one of three outputs per channel, two groups of 8 outputs) runs on integer kernels")
    func groupedConvolutions() throws {
        for kernels in KernelSet.supported() {
            let (steps, integer) = try Self.integerSteps("qdq_grouped_int8", kernels: kernels)
            #expect(!steps.contains { ["Conv", "QuantizeLinear", "DequantizeLinear"].contains($0.op) }, "\(kernels): \(steps)")
            #expect(integer == ["int8 rows 1x1/1", "int8 grouped 3x3/1", "int8 grouped 3x3/2", "int8 grouped 3x3/1", "int8 grouped 2x2/1",
                                "int8 grouped 1x1/1", "int8 grouped 3x3/1", "int8 grouped 3x3/1"], "\(kernels): \(steps)")
        }
    }

    @Test("depthwise layers writing floats (40 channels: whole groups and a last one of 8; one and two output rows at a time) and a grouped one (products of 5 groups and of 3) run on integer kernels")
    func depthwiseToFloat() throws {
        for kernels in KernelSet.supported() {
            let (steps, integer) = try Self.integerSteps("qdq_depthwise_to_float", kernels: kernels)
            #expect(integer == ["int8 rows 1x1/1", "int8 depthwise 3x3/1 to float", "int8 depthwise 5x5/2 to float", "int8 grouped 3x3/1 to float"],
                    "\(kernels): \(steps)")
        }
    }

    @Test("a SiLU or HardSwish after an integer convolution runs in its store: to levels (unrolled, pointwise, depthwise, a pooled position) and to floats (a depthwise layer whose SiLU two layers read, a pointwise one); a pooling of rounded values rounds as it reads")
    func gatedConvolutions() throws {
        for kernels in KernelSet.supported() {
            let (steps, integer) = try Self.integerSteps("qdq_gated", kernels: kernels)
            #expect(integer == ["int8 unrolled 3x3/2 + silu", "int8 rows 1x1/1 + hard-swish", "int8 depthwise 3x3/1 + silu to float",
                                "int8 rows 1x1/1 + silu", "int8 rows 1x1/1 to float", "int8 rows 1x1/1", "int8 depthwise 5x5/2 + hard-swish",
                                "int8 rows 1x1/1 + hard-swish to float"],
                    "\(kernels): \(steps)")
            // The excitation's Sigmoid alone stays a float step; its pooling rounds the values it reads (no step of its own for that).
            #expect(!steps.contains { ["Conv", "Swish", "HardSwish", "kiroku.QuantizeDequantize"].contains($0.op) }
                        && steps.filter { $0.op == "Sigmoid" }.count == 1, "\(kernels): \(steps)")
            #expect(steps.contains { $0.op == "GlobalAveragePool" && $0.variant == "of rounded values" }, "\(kernels): \(steps)")
        }
    }

    @Test("a squeeze-excitation's Mul of floats by channel factors joins the Quantize after it (a batch of 2, image by image): no Mul step, the product never stored")
    func excitationJoinsQuantize() throws {
        for kernels in KernelSet.supported() {
            let (steps, integer) = try Self.integerSteps("qdq_excitation_batch2", kernels: kernels)
            #expect(integer == ["int8 rows 1x1/1 + silu to float", "int8 rows 1x1/1", "int8 rows 1x1/1 to float", "int8 rows 1x1/1"],
                    "\(kernels): \(steps)")
            // One step does both: it names the Mul and the Quantize.
            #expect(steps.filter { $0.operators.contains("Mul") }.map(\.operators) == [["Mul", "kiroku.Quantize"]]
                        && steps.filter { $0.variant == "times channel factors" }.count == 1, "\(kernels): \(steps)")
        }
    }

    @Test("a squeeze-excitation's pooling and Mul of the levels a layer wrote run on them (a batch of 2, each image its own factors; 45 channels): no float copy of them; a Mul by one factor per position broadcasts")
    func excitationOnLevels() throws {
        for kernels in KernelSet.supported() {
            let (steps, integer) = try Self.integerSteps("qdq_excitation_levels_batch2", kernels: kernels)
            #expect(integer == ["int8 rows 1x1/1 + silu", "int8 rows 1x1/1", "int8 rows 1x1/1 to float", "int8 rows 1x1/1", "int8 rows 1x1/1"],
                    "\(kernels): \(steps)")
            #expect(steps.filter { $0.op == "kiroku.IntegerMean" }.count == 1 && !steps.contains { $0.op == "GlobalAveragePool" }, "\(kernels): \(steps)")
            #expect(steps.filter { $0.op == "kiroku.IntegerScale" }.compactMap(\.variant) == ["by channel", "broadcast"]
                        && !steps.contains { $0.operators.contains("Mul") }, "\(kernels): \(steps)")
            // Floats of the levels only for the ReduceMean over channels, and the two outputs.
            #expect(steps.filter { $0.op == "kiroku.Dequantize" }.count == 3, "\(kernels): \(steps)")
        }
    }

    @Test("ONNX Runtime's operator form: each QLinearConv and QLinearMatMul runs on the integer kernels", arguments: ["qop_convs_uint8", "qop_matmuls_uint8"])
    func operatorForm(_ name: String) throws {
        let reference = try #require(Self.all.first { $0.name == name })
        let steps = try InferenceSession(model: try reference.model(), threads: 1, integerLayers: .all).steps
        #expect(!steps.contains { $0.op.hasPrefix("QLinear") || $0.op == "QuantizeLinear" }, "\(steps)")
        #expect(steps.filter { $0.op == "kiroku.IntegerConvolution" }.count == (name == "qop_convs_uint8" ? 3 : 2), "\(steps)")
    }

    @Test("a Clip with one bound folds into the levels, a broadcasting Add of two quantized values runs on levels, a MatMul of a 3-D value stays on floats")
    func handmadeEdges() throws {
        let reference = try #require(Self.all.first { $0.name == "qdq_handmade_edges" })
        let steps = try InferenceSession(model: try reference.model(), threads: 1, integerLayers: .all).steps
        #expect(steps.filter { $0.op == "kiroku.IntegerConvolution" }.count == 2 && !steps.contains { $0.op == "Conv" || $0.op == "Clip" }, "\(steps)")
        #expect(steps.filter { $0.op == "kiroku.IntegerAdd" }.count == 1, "\(steps)")
        #expect(steps.filter { $0.op == "MatMul" }.count == 1, "\(steps)")
    }

    @Test("every convolution, the Gemm, the Add and the MaxPool run on integer kernels; only the average poolings run on floats, between Dequantize and Quantize")
    func integerKernels() throws {
        let model = try #require(Self.all.first).model()
        let steps = try InferenceSession(model: model, threads: 1, kernels: .avx2, integerLayers: .all).steps
        #expect(!steps.contains { ["QuantizeLinear", "DequantizeLinear", "Conv", "Gemm", "Add"].contains($0.op) }, "\(steps)")
        let integer = steps.filter { $0.op == "kiroku.IntegerConvolution" }.map { $0.variant ?? "" }
        #expect(integer == ["int8 unrolled 3x3/2", "int8 depthwise 3x3/1", "int8 rows 1x1/1", "int8 unrolled 3x3/1", "int8 rows 1x1/1"],
                "\(steps)")
        #expect(steps.filter { $0.op == "kiroku.IntegerAdd" }.count == 1 && steps.filter { $0.op == "kiroku.IntegerMaxPool" }.count == 1, "\(steps)")
        #expect(steps.filter { $0.op == "kiroku.Quantize" }.count == 2 && steps.filter { $0.op == "kiroku.Dequantize" }.count == 2, "\(steps)")
    }

    @Test("a MaxPool between levels runs on them: asymmetric pads with ceil_mode and a dilated window over negative levels; to levels of another scale and zero point; a window wholly in padding",
          arguments: [("qdq_maxpool_edges_int8", ["int8 3x3/2", "int8 3x2/1"]), ("qdq_maxpool_rescaled", ["int8 3x3/2", "int8 2x2/2"]),
                      ("qdq_maxpool_padding", ["int8 1x2/1"])])
    func maxPoolOnLevels(_ name: String, _ variants: [String]) throws {
        let reference = try #require(Self.all.first { $0.name == name })
        let steps = try InferenceSession(model: try reference.model(), threads: 1, integerLayers: .all).steps
        #expect(steps.filter { $0.op == "kiroku.IntegerMaxPool" }.compactMap(\.variant) == variants, "\(steps)")
        // Levels from the input's Quantize to the output's Dequantize.
        #expect(steps.first?.op == "kiroku.Quantize" && steps.last?.op == "kiroku.Dequantize", "\(steps)")
        #expect(steps.dropFirst().dropLast().allSatisfy { ["kiroku.IntegerConvolution", "kiroku.IntegerMaxPool"].contains($0.op) }, "\(steps)")
    }

    @Test("with VNNI, every integer convolution but the depthwise ones multiplies bytes (weights within int8), others stay on int16 pairs",
          .enabled(if: KernelSet.supported().contains(.vnni), "this CPU lacks AVX-512 VNNI"), arguments: all)
    func byteProducts(_ reference: ReferenceCase) throws {
        let steps = try InferenceSession(model: try reference.model(), threads: 1, kernels: .vnni, integerLayers: .all).steps
        let integer = steps.filter { $0.op == "kiroku.IntegerConvolution" }.compactMap(\.variant)
        #expect(!integer.isEmpty)
        for variant in integer { #expect(variant.hasSuffix(" vnni") == !variant.contains("depthwise"), "\(reference.name): \(integer)") }
    }
}
