import Foundation
@testable import KirokuInference
import KirokuTestSupport
import Testing

@Suite("quantization: calibration ranges and the integers written")
struct QuantizationCalibrationTests {
    /// `proto` written as a model file of the test process's scratch directory.
    static func written(_ proto: Onnx_ModelProto, _ name: String) throws -> URL {
        let url = URL(fileURLWithPath: TestScratch.path(name, suffix: ".onnx"))
        try proto.serializedData().write(to: url)
        return url
    }

    @Test("the histogram keeps exact extremes across widenings and finds a percentile within one bin")
    func histogram() {
        var histogram = ValueHistogram()
        let first = (1...50_000).map { Float($0) }, second = (50_001...100_000).map { Float($0) } + [-3, .nan, .infinity]
        first.withUnsafeBufferPointer { histogram.add($0) }
        second.withUnsafeBufferPointer { histogram.add($0) }  // twice the first limit: the bins widen once
        #expect(histogram.count == 100_001)
        #expect(histogram.range(.minMax) == -3...100_000)
        let range = histogram.range(.percentile(99.9))
        let bin = Float(100_000) / Float(ValueHistogram.bins)
        #expect(range.map { abs($0.upperBound - 99_900) <= bin } == true, "\(String(describing: range))")
        #expect(range?.lowerBound == 0, "the one negative value is inside the clipped tail")
        #expect(ValueHistogram().range(.minMax) == nil)
    }

    @Test("activation scales and zero points map the range, widened to hold zero, onto 256 steps")
    func affine() {
        #expect(StaticQuantizer.affine(0...6, .uint8) == (6 / 255, 0))
        #expect(StaticQuantizer.affine(-1...3, .uint8) == (4 / 255, 64))
        #expect(StaticQuantizer.affine(-1...3, .int8) == (4 / 255, -64))
        #expect(StaticQuantizer.affine(2...4, .uint8) == (4 / 255, 0))
        #expect(StaticQuantizer.affine(-5...(-5), .int8) == (5 / 255, 127))
        #expect(StaticQuantizer.affine(0...0, .uint8) == (1, 0))
    }

    @Test("weights are symmetric per channel along their axis, rounding half to even")
    func symmetric() {
        let weights = Tensor(shape: [2, 3], data: [0.5, -1, 0.25, 0, 0, 0])
        let rows = StaticQuantizer.symmetric(weights, axis: 0, largest: 127)
        #expect(rows.scales == [1 / 127, 1])
        #expect(rows.values == [64, -127, 32, 0, 0, 0])  // 63.5 → 64, 31.75 → 32
        let columns = StaticQuantizer.symmetric(Tensor(shape: [2, 2], data: [31.5, 63, -63, 0.5]), axis: 1, largest: 63)
        #expect(columns.scales == [1, 1])
        #expect(columns.values == [32, 63, -63, 0])  // 31.5 → 32, 0.5 → 0
        // A floor raises a scale (the all-but-zero channel rounds to zeros) and leaves larger ones.
        let floored = StaticQuantizer.symmetric(Tensor(shape: [2, 2], data: [1e-9, -2e-9, 127, 1]), axis: 0, largest: 127, floors: [0.5, 0.5])
        #expect(floored.scales == [0.5, 1])
        #expect(floored.values == [0, 0, 127, 1])
    }

    @Test("EfficientNet-Lite0: every bias is written as int32, near-zero channels included, and carries its bias correction")
    func biases() throws {
        let url = DefaultModelTests.models.appendingPathComponent("efficientnet-lite0.onnx")
        let quantizer = try StaticQuantizer(contentsOf: url)
        let calibrator = try Calibrator(quantizer, threads: 1)
        let count = calibrator.inputShape.reduce(1, *)
        try calibrator.observe((0..<count).map { sin(Float($0) * 0.37) })  // a smooth, deterministic image
        let ranges = calibrator.ranges(.minMax)
        let read = { (data: Data) throws -> Onnx_ModelProto in try Onnx_ModelProto(serializedBytes: data) }
        let plain = try read(try quantizer.quantized(ranges: ranges, activationType: .uint8))
        let corrected = try read(try quantizer.quantized(ranges: ranges, activationType: .uint8, channelMeans: calibrator.channelMeans()))
        let layers = { (model: Onnx_ModelProto) in model.graph.node.filter { ["Conv", "Gemm"].contains($0.opType) } }
        #expect(layers(plain).count == 50)
        // The model has channels whose folded weights are below 1e-8 of the largest: at their own
        // scale their biases would overflow int32 (26 of its 50 biases stayed float, uncorrected).
        #expect(layers(plain).allSatisfy { $0.input.count == 3 && $0.input[2].hasSuffix("_dequantized") }, "every bias behind DequantizeLinear")
        let integers = { (model: Onnx_ModelProto, name: String) -> [Int32] in
            let data = model.graph.initializer.first { $0.name == name }?.rawData ?? Data()
            return data.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
        }
        let changed = zip(layers(plain), layers(corrected)).filter { plainNode, correctedNode in
            let name = String(plainNode.input[2].dropLast("_dequantized".count))
            return integers(plain, name) != integers(corrected, String(correctedNode.input[2].dropLast("_dequantized".count)))
        }
        #expect(changed.count >= 45, "bias correction reached \(changed.count) of 50 layers")
    }

    @Test("nodes kept float by name or operator type keep their float weights and the activations only they read; an unknown name is refused")
    func keptFloat() throws {
        let url = DefaultModelTests.models.appendingPathComponent("efficientnet-lite0.onnx")
        let all = try StaticQuantizer(contentsOf: url)
        let depthwise = "_blocks.0._depthwise_conv"
        let kept = try StaticQuantizer(contentsOf: url, keepingFloat: ["Gemm", depthwise])
        // The Gemm's input (the flattened pool) and the depthwise conv's input are read by nothing else.
        #expect(kept.activations.count == all.activations.count - 2)
        let ranges = Dictionary(uniqueKeysWithValues: all.activations.map { ($0, ClosedRange<Float>(uncheckedBounds: (-1, 6))) })
        let model = try Onnx_ModelProto(serializedBytes: try kept.quantized(ranges: ranges, activationType: .uint8))
        let layers = model.graph.node.filter { ["Conv", "Gemm"].contains($0.opType) }
        let float = layers.filter { !$0.input[1].hasSuffix("_dequantized") }
        #expect(Set(float.map(\.opType)) == ["Conv", "Gemm"] && float.count == 2, "\(float.map(\.name))")
        #expect(float.allSatisfy { $0.opType == "Gemm" || $0.name == depthwise })
        #expect(float.allSatisfy { $0.input.count == 3 && !$0.input[0].hasSuffix("_dequantized") && !$0.input[2].hasSuffix("_dequantized") })
        let floatWeights = Set(model.graph.initializer.filter { $0.dataType == Int32(Onnx_TensorProto.DataType.float.rawValue) }.map(\.name))
        #expect(float.allSatisfy { floatWeights.contains($0.input[1]) })
        #expect(layers.count - float.count == 48)

        // An activation a kept node shares with a quantized one keeps its pair for the other reader.
        let shared = try StaticQuantizer(contentsOf: url, keepingFloat: ["_blocks.2._expand_conv"])
        #expect(shared.activations.count == all.activations.count)
        let sharedModel = try Onnx_ModelProto(serializedBytes: try shared.quantized(ranges: ranges, activationType: .uint8))
        let node = { (name: String) in sharedModel.graph.node.first { $0.name == name } }
        #expect(node("_blocks.2._expand_conv")?.input[0] == "_blocks.1._bn2.out")
        #expect(node("_blocks.2.residual")?.input[1] == "_blocks.1._bn2.out_dequantized")

        // Unknown names, and nodes never quantized (Clip) or folded away (BatchNormalization), are all named.
        let error = #expect(throws: InferenceError.self) {
            try StaticQuantizer(contentsOf: url, keepingFloat: ["Gemm", "_no_such_node", "Clip", "BatchNormalization"])
        }
        #expect(error?.kind == .unknownNode, "\(String(describing: error))")
        #expect(["'_no_such_node'", "'Clip'", "'BatchNormalization'"].allSatisfy { error?.message.contains($0) == true } && error?.message.contains("'Gemm'") == false,
                "\(String(describing: error))")
    }

    @Test("a squeeze-excitation's Mul reads the activation its pooling rounds (as ONNX Runtime's quantizer has it), so both run on the levels the layer before wrote; a SiLU's Mul, and one whose product the next layer (kept float) reads unrounded, keep their float input")
    func excitationReadsRoundedActivation() throws {
        let fixture = try #require(ReferenceCase.all.first { $0.name == "blocked_squeeze_excitation_silu_batch2" })
        let quantizer = try StaticQuantizer(contentsOf: fixture.directory.appendingPathComponent("model.onnx"))
        let ranges = Dictionary(uniqueKeysWithValues: quantizer.activations.map { ($0, ClosedRange<Float>(uncheckedBounds: (-4, 4))) })
        let bytes = try quantizer.quantized(ranges: ranges, activationType: .uint8)
        let muls = try Onnx_ModelProto(serializedBytes: bytes).graph.node.filter { $0.opType == "Mul" }
        #expect(muls.count == 4 && muls.filter { $0.input.contains { $0.hasSuffix("_dequantized") } }.map(\.input) == [["scale", "da_dequantized"]],
                "\(muls.map(\.input))")
        // With the layer after it kept float, the product is not rounded: nor is the Mul's input.
        let kept = try StaticQuantizer(contentsOf: fixture.directory.appendingPathComponent("model.onnx"), keepingFloat: ["proj"])
        let keptMuls = try Onnx_ModelProto(serializedBytes: try kept.quantized(ranges: ranges, activationType: .uint8)).graph.node.filter { $0.opType == "Mul" }
        #expect(keptMuls.count == 4 && !keptMuls.contains { $0.input.contains { $0.hasSuffix("_dequantized") } }, "\(keptMuls.map(\.input))")
        for kernels in KernelSet.supported() {
            let session = try InferenceSession(model: Model(serialized: bytes, name: "excitation"), batchSize: 2, threads: 1, kernels: kernels,
                                               integerLayers: .all)
            let operators = session.steps.map(\.op)
            #expect(operators.filter { ["kiroku.IntegerMean", "kiroku.IntegerScale"].contains($0) } == ["kiroku.IntegerMean", "kiroku.IntegerScale"]
                        && !session.steps.contains { $0.nodes.contains("da_dequantize") } && !operators.contains("GlobalAveragePool"),
                    "\(kernels): \(session.steps)")
        }
    }

    @Test("weights read through Identity nodes (TorchScript's exporter writes a tensor it holds once so) are quantized as the initializer they copy, a chain of two Identities too, and the quantized model runs every layer on integer kernels")
    func weightsThroughIdentities() throws {
        // The chain's three convolutions, x → p → d → y; y's weights (w2) read through Identity → Identity.
        let fixture = try #require(ReferenceCase.all.first { $0.name == "blocked_chain_small_plane" })
        var proto = try Onnx_ModelProto(serializedBytes: try Data(contentsOf: fixture.directory.appendingPathComponent("model.onnx")))
        var first = Onnx_NodeProto(), second = Onnx_NodeProto()
        (first.opType, first.input, first.output) = ("Identity", ["w2"], ["w2_copy"])
        (second.opType, second.input, second.output) = ("Identity", ["w2_copy"], ["w2_read"])
        let last = try #require(proto.graph.node.firstIndex { $0.output == ["y"] })
        proto.graph.node[last].input[1] = "w2_read"
        proto.graph.node.insert(contentsOf: [first, second], at: 0)
        let url = try Self.written(proto, "identity")

        let quantizer = try StaticQuantizer(contentsOf: url)
        #expect(quantizer.weightedLayers.map(\.name) == ["p", "d", "y"])
        let ranges = Dictionary(uniqueKeysWithValues: quantizer.activations.map { ($0, ClosedRange<Float>(uncheckedBounds: (-4, 4))) })
        let bytes = try quantizer.quantized(ranges: ranges, activationType: .uint8)
        let written = try Onnx_ModelProto(serializedBytes: bytes).graph
        #expect(!written.node.contains { $0.opType == "Identity" }, "\(written.node.map(\.opType))")
        let convs = written.node.filter { $0.opType == "Conv" }
        #expect(convs.count == 3 && convs.allSatisfy { $0.input[1].hasSuffix("_dequantized") }, "\(convs.map(\.input))")
        let session = try InferenceSession(model: Model(serialized: bytes, name: "identity"), threads: 1, integerLayers: .all)
        #expect(session.steps.filter { $0.op == "kiroku.IntegerConvolution" }.count == 3, "\(session.steps)")
    }

    @Test("summed convolution branches (RepVGG, MobileOne, FastViT) are merged before quantization, as the engine merges them in the float model: one int8 convolution per block, each weight rounded once, and the QDQ model close to ONNX Runtime's float output")
    func branchesMergedBeforeQuantization() throws {
        // The fixture's batch of 2 made symbolic: calibration runs one image at a time.
        let fixture = try #require(ReferenceCase.all.first { $0.name == "parallel_branches" })
        var proto = try Onnx_ModelProto(serializedBytes: try Data(contentsOf: fixture.directory.appendingPathComponent("model.onnx")))
        for index in proto.graph.input.indices { proto.graph.input[index].type.tensorType.shape.dim[0].dimParam = "batch" }
        for index in proto.graph.output.indices { proto.graph.output[index].type.tensorType.shape.dim[0].dimParam = "batch" }
        // As exported (unnamed nodes), and named, the first block's 1x1 branch with the name its merged 3x3 convolution gets.
        var named = proto
        for index in named.graph.node.indices { named.graph.node[index].name = index == 1 ? "node4#merged" : "node\(index)" }
        for (model, label) in [(proto, "at"), (named, "node4#merged")] {
            try checkMerged(try StaticQuantizer(contentsOf: try Self.written(model, "branches")), label: label, fixture: fixture)
        }
    }

    private func checkMerged(_ quantizer: StaticQuantizer, label: String, fixture: ReferenceCase) throws {
        // The blocks' sums become 6 convolutions, and the dilated pair stays two (as in the float engine's steps).
        #expect(quantizer.weightedLayers.count == 7 && quantizer.weightedLayers.allSatisfy { $0.opType == "Conv" }, "\(quantizer.weightedLayers)")
        #expect(quantizer.weightedLayers.contains { $0.name == label }, "the first block's merged convolution is labelled \(label)")
        let calibrator = try Calibrator(quantizer, threads: 1)
        let input = try fixture.tensor("input_0.npy")
        let image = input.count / 2
        for first in [0, image] { try calibrator.observe(Array(input.data[first..<(first + image)])) }
        let bytes = try quantizer.quantized(ranges: calibrator.ranges(.minMax), activationType: .uint8)
        let written = try Onnx_ModelProto(serializedBytes: bytes).graph
        #expect(!written.node.contains { ["BatchNormalization", "Sub", "Mul"].contains($0.opType) }, "\(written.node.map(\.opType))")
        #expect(written.node.filter { $0.opType == "Conv" }.allSatisfy { $0.input[1].hasSuffix("_dequantized") })
        let session = try InferenceSession(model: Model(serialized: bytes, name: "branches"), batchSize: 2, threads: 1, integerLayers: .all)
        #expect(session.steps.filter { $0.op == "kiroku.IntegerConvolution" }.count == 7, "\(session.steps.map(\.op))")
        let output = try #require(try session.run(input).first?.data)
        let expected = try fixture.tensor("expected_0.npy").data
        let largest = expected.map(abs).max() ?? 0
        let error = zip(output, expected).map { abs($0 - $1) }.max() ?? .infinity
        #expect(output.count == expected.count && error < 0.03 * largest, "largest difference \(error) of \(largest)")
    }

    @Test("layer sensitivity: each layer left float in turn, ranked by the output error left; a coarse input range makes its reader rank first")
    func sensitivity() throws {
        // Three convolutions, unnamed (each labelled by its output): x → p, p → d (depthwise), d → y.
        let fixture = try #require(ReferenceCase.all.first { $0.name == "blocked_chain_small_plane" })
        let url = fixture.directory.appendingPathComponent("model.onnx")
        let quantizer = try StaticQuantizer(contentsOf: url)
        #expect(quantizer.weightedLayers.map(\.name) == ["p", "d", "y"])
        let calibrator = try Calibrator(quantizer, threads: 1)
        let input = try fixture.tensor("input_0.npy").data
        try calibrator.observe(input)
        // 'd' (read by the last convolution alone) gets 64 times its range: its steps are 64 times coarser.
        var ranges = calibrator.ranges(.minMax)
        let range = try #require(ranges["d"])
        ranges["d"] = (range.lowerBound * 64)...(range.upperBound * 64)
        let float = try InferenceSession(model: try fixture.model(), batchSize: 1, threads: 1)
        var measured = 0
        let scan = try LayerSensitivity(quantizer, float: float, inputs: [input, input.map { $0 * 0.5 }],
                                        quantize: { plan throws(InferenceError) in try plan.quantized(ranges: ranges, activationType: .uint8) },
                                        progress: { measured += 1 })
        #expect(measured == 3)
        #expect(Set(scan.layers.map(\.node)) == ["p", "d", "y"] && scan.layers.map(\.opType) == ["Conv", "Conv", "Conv"])
        #expect(scan.layers.map(\.meanSquaredOutputDifference) == scan.layers.map(\.meanSquaredOutputDifference).sorted())
        #expect(scan.layers.first?.node == "y", "\(scan.layers)")
        #expect(scan.baseline > 0 && (scan.layers.first?.meanSquaredOutputDifference ?? .infinity) < scan.baseline / 10, "\(scan)")
        #expect(scan.layers.dropFirst().allSatisfy { $0.meanSquaredOutputDifference > scan.baseline / 2 }, "\(scan)")
    }

    @Test("bias correction: the mean output shift of rounded weights, per output channel, through groups and both weight layouts")
    func outputShift() {
        // Depthwise (2 groups of 1 channel, 2 taps), channel means 1 and 10.
        let depthwise = Tensor(shape: [2, 1, 1, 2], data: [0.5, -0.25, 0.125, 0.125])
        #expect(StaticQuantizer.outputShift(depthwise, axis: 0, groups: 2, inputMeans: [1, 10]) == [0.25, 2.5])
        // Dense [M=1, C=2, 1 tap]: both input channels reach the one output.
        let dense = Tensor(shape: [1, 2, 1, 1], data: [1, 2])
        #expect(StaticQuantizer.outputShift(dense, axis: 0, groups: 1, inputMeans: [3, 4]) == [11])
        // A MatMul's [K=2, N=3]: output n sums column n.
        let matrix = Tensor(shape: [2, 3], data: [1, 2, 3, 4, 5, 6])
        #expect(StaticQuantizer.outputShift(matrix, axis: 1, groups: 1, inputMeans: [1, -1]) == [-3, -3, -3])
        #expect(StaticQuantizer.outputShift(matrix, axis: 1, groups: 1, inputMeans: [1]).isEmpty, "means of another length")
    }
}
