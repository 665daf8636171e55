/// Runs a quantizer's float model on calibration inputs (one image at a time) and records what
/// each activation it will quantize took: one session, reused for every image.
public final class Calibrator {
    /// The calibration inputs seen so far.
    public private(set) var images = 0
    private let session: InferenceSession
    private let activations: [String]
    /// Each activation's place: the graph input (nil), or its index among the session's outputs.
    private let sources: [Int?]
    private var histograms: [ValueHistogram]

    /// Compiles the quantizer's float model, with its planned activations as extra outputs.
    public init(_ quantizer: StaticQuantizer, threads: Int? = nil) throws(InferenceError) {
        let model = try quantizer.calibrationModel()
        session = try InferenceSession(model: model, batchSize: 1, threads: threads)
        activations = quantizer.activations
        let inputs = Set(model.inputNames), outputs = model.graph.outputs
        sources = activations.map { inputs.contains($0) ? nil : outputs.firstIndex(of: $0) }
        histograms = Array(repeating: ValueHistogram(), count: activations.count)
    }

    /// The model's input shape (batch 1).
    public var inputShape: [Int] { session.inputShape }

    /// Runs one input of `inputShape` through the model and adds the values of every activation.
    public func observe(_ input: [Float]) throws(InferenceError) {
        let outputs = try session.run(Tensor(shape: session.inputShape, data: input))
        for (index, source) in sources.enumerated() {
            (source.map { outputs[$0].data } ?? input).withUnsafeBufferPointer { histograms[index].add($0) }
        }
        images += 1
    }

    /// Each activation's range by `method`; activations that never held a finite value are left out.
    public func ranges(_ method: CalibrationMethod) -> [String: ClosedRange<Float>] {
        var ranges: [String: ClosedRange<Float>] = [:]
        for (name, histogram) in zip(activations, histograms) { ranges[name] = histogram.range(method) }
        return ranges
    }
}
