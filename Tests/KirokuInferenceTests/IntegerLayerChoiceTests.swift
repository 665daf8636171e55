import Foundation
@testable import KirokuInference
import Testing

/// An int8 model's session chooses, per host, which quantized layers run on integer kernels:
/// EfficientNet-Lite0 quantized here (ranges from a few seeded inputs), with its integer loops
/// forced to the portable build beside AVX2 float loops, so that integer is the slow side.
@Suite("Integer layers chosen on the host")
struct IntegerLayerChoiceTests {
    /// Lite0 as an int8 QDQ model.
    static func quantizedLite0() throws -> Model {
        let url = DefaultModelTests.models.appendingPathComponent("efficientnet-lite0.onnx")
        let quantizer = try StaticQuantizer(contentsOf: url)
        let calibrator = try Calibrator(quantizer, threads: 1)
        var state: UInt64 = 20261127
        for _ in 0..<2 {
            try calibrator.observe((0..<(3 * 224 * 224)).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Float(state >> 40) / Float(1 << 24) * 4 - 2
            })
        }
        return try Model(serialized: try quantizer.quantized(ranges: calibrator.ranges(.minMax), activationType: .uint8), name: "lite0.int8")
    }

    @Test("all, none and given layers are honoured; layers on float kernels compute as the float model's, on its weights rounded to 8 bits")
    func fixedChoices() throws {
        let model = try Self.quantizedLite0()
        let integer = try InferenceSession(model: model, batchSize: 1, threads: 1, integerLayers: .all)
        let float = try InferenceSession(model: model, batchSize: 1, threads: 1, integerLayers: .none)
        #expect(integer.integerLayers.integer == integer.integerLayers.quantized && integer.integerLayers.quantized > 40)
        #expect(integer.integerLayers.precision == "int8" && integer.integerLayers.multiplyAddShare > 0.9)
        #expect(float.integerLayers.integer == 0 && float.integerLayers.quantized == integer.integerLayers.quantized)
        #expect(float.integerLayers.precision == "float32" && float.integerLayers.floatLayers.count == integer.integerLayers.quantized)
        let two = Set(float.integerLayers.floatLayers.prefix(2))
        let given = try InferenceSession(model: model, batchSize: 1, threads: 1, integerLayers: .floatLayers(two))
        #expect(given.integerLayers.integer == integer.integerLayers.quantized - 2 && given.integerLayers.precision == "mixed")
        #expect(given.integerLayers.chosenBy == "given" && Set(given.integerLayers.floatLayers) == two)

        let input = Tensor(shape: [1, 3, 224, 224], data: (0..<(3 * 224 * 224)).map { Float($0 % 251) / 125 - 1 })
        let original = try InferenceSession(model: try Model(contentsOf: DefaultModelTests.models.appendingPathComponent("efficientnet-lite0.onnx")),
                                            batchSize: 1, threads: 1)
        let (reference, floatLayers, integerLayers) = (try original.run(input)[0].data, try float.run(input)[0].data, try integer.run(input)[0].data)
        let largest = reference.map(abs).max() ?? 1
        let apart = { (a: [Float]) in zip(a, reference).map { abs($0 - $1) }.max() ?? .infinity }
        // Weights rounded to 8 bits and float activations stay near the float model; levels between
        // every layer (calibrated on two random inputs, not this one) move further.
        #expect(apart(floatLayers) <= 0.05 * largest && apart(floatLayers) < apart(integerLayers),
                "float kernels \(apart(floatLayers)), integer \(apart(integerLayers)), of \(largest)")
    }

    @Test("the plan run: all float on a tie (integer within 3% of it), all integer where it beats float by more than that, the per-layer mix where it beats the faster whole plan by more than 5% and float by more than 3%")
    func fastestPlan() {
        #expect(IntegerLayerChoice.fastest([9.0, 10.0]) == 0)
        #expect(IntegerLayerChoice.fastest([9.8, 10.0]) == 1, "2% faster: a tie")
        #expect(IntegerLayerChoice.fastest([10.5, 10.0]) == 1)
        #expect(IntegerLayerChoice.fastest([9.0, 10.0, 8.0]) == 2)
        #expect(IntegerLayerChoice.fastest([9.0, 10.0, 8.8]) == 0, "within 5% of all integer")
        #expect(IntegerLayerChoice.fastest([12.0, 10.0, 9.8]) == 1, "2% under all float: a tie")
        #expect(IntegerLayerChoice.fastest([12.0, 10.0, 9.4]) == 2)
        #expect(IntegerLayerChoice.fastest([9.8, 10.0, 9.4]) == 1, "the mix within 5% of all integer, all integer a tie with float")
    }

    @Test("measured: with slow integer loops forced, the session times the plans and runs the fastest, which is not all integer")
    func measuredChoice() throws {
        try #require(KernelSet.supported().contains(.avx2), "needs AVX2 float loops beside portable integer ones")
        let model = try Self.quantizedLite0()
        let session = try InferenceSession(model: model, batchSize: 1, threads: 1, kernels: .avx2, integerLayers: .measured,
                                           integerKernels: .portable)
        let layers = session.integerLayers
        let timing = try #require(layers.timing)
        #expect(layers.chosenBy == "measured" && timing.measuredFor > 0, "\(layers)")
        #expect(timing.allInteger > timing.allFloat, "portable integer loops are slower than AVX2 float ones: \(timing)")
        // The plan chosen: all float (the faster whole plan), or the per-layer choice where it beat that by more than 5%.
        if (timing.perLayer ?? .infinity) >= 0.95 * timing.allFloat {
            #expect(layers.integer == 0 && layers.precision == "float32", "\(layers)")
        } else {
            #expect(layers.integer > 0 && layers.integer < layers.quantized && layers.precision == "mixed", "\(layers)")
        }
        #expect(layers.summary.contains("measured on this CPU: all integer"), "\(layers.summary), in \(timing.measuredFor) ms")
        // The float model itself has nothing to choose.
        let float = try InferenceSession(model: try Model(contentsOf: DefaultModelTests.models.appendingPathComponent("efficientnet-lite0.onnx")),
                                         batchSize: 1, threads: 1)
        #expect(float.integerLayers.quantized == 0 && float.integerLayers.timing == nil && float.integerLayers.precision == "float32")
    }
}
