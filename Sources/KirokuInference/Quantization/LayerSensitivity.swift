import Foundation

/// How much each quantized layer adds to a quantized model's output error, on calibration
/// inputs: the model quantized with every layer, then once per layer with that layer alone left
/// float, each run on the same inputs as the float model and compared by mean squared output
/// difference. The layers whose float copy lowers the error most are the ones to keep float.
public struct LayerSensitivity: Sendable {
    /// One layer left float.
    public struct Layer: Sendable, Encodable {
        /// The node's name.
        public let node: String
        /// Its operator type.
        public let opType: String
        /// The mean squared output difference from the float model with this layer left float.
        public let meanSquaredOutputDifference: Double
    }

    /// The mean squared output difference from the float model as `quantizer` plans it.
    public let baseline: Double
    /// Every layer, the one whose float copy lowers the error most first.
    public let layers: [Layer]

    /// Measures `quantizer`'s layers on `inputs` (each one model input, batch 1); `quantize`
    /// writes a plan as QDQ bytes with the caller's ranges and options; `progress` is called
    /// after each layer.
    public init(_ quantizer: StaticQuantizer, float: InferenceSession, inputs: [[Float]],
                quantize: @escaping (StaticQuantizer) throws(InferenceError) -> Data, progress: () -> Void = {}) throws(InferenceError) {
        let measure = try OutputError(float: float, inputs: inputs, quantize: quantize)
        func error(_ plan: StaticQuantizer) throws(InferenceError) -> Double { try measure(plan) }
        baseline = try error(quantizer)
        var layers: [Layer] = []
        for layer in quantizer.weightedLayers {
            layers.append(Layer(node: layer.name, opType: layer.opType,
                                meanSquaredOutputDifference: try error(try quantizer.keepingFloat([layer.name]))))
            progress()
        }
        // Ties keep graph order; a layer whose error is not a number goes last.
        self.layers = layers.enumerated().sorted { a, b in
            let (x, y) = (a.element.meanSquaredOutputDifference, b.element.meanSquaredOutputDifference)
            return (x.isNaN ? 1 : 0, x.isNaN ? 0 : x, a.offset) < (y.isNaN ? 1 : 0, y.isNaN ? 0 : y, b.offset)
        }.map(\.element)
    }
}

/// The mean squared output difference of a quantization plan from the float model on fixed
/// inputs (batch 1), its layers on integer kernels: what `LayerSensitivity` ranks layers by and
/// `kiroku quantize --target-mse` holds a plan to.
public struct OutputError {
    private let tensors: [Tensor], references: [[Float]], threads: Int
    private let quantize: (StaticQuantizer) throws(InferenceError) -> Data

    /// Runs `inputs` through `float` once for the references; `quantize` writes a plan as QDQ bytes.
    public init(float: InferenceSession, inputs: [[Float]], quantize: @escaping (StaticQuantizer) throws(InferenceError) -> Data) throws(InferenceError) {
        tensors = inputs.map { Tensor(shape: float.inputShape, data: $0) }
        var references: [[Float]] = []
        for tensor in tensors { references.append(try float.run(tensor)[0].data) }
        (self.references, self.quantize, threads) = (references, quantize, float.threads)
    }

    /// The plan's mean squared output difference over the inputs.
    public func callAsFunction(_ plan: StaticQuantizer) throws(InferenceError) -> Double {
        let session = try InferenceSession(model: try Model(serialized: try quantize(plan), name: plan.name), batchSize: 1,
                                           threads: threads, integerLayers: .all)
        var total = 0.0
        for (tensor, reference) in zip(tensors, references) {
            total += Tensor.meanSquaredDifference(reference, try session.run(tensor)[0].data)
        }
        return total / Double(max(tensors.count, 1))
    }
}
