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
    /// Each activation's sums per channel (axis 1) over the images.
    private var channelSums: [[Double]]

    /// Compiles the quantizer's float model, with its planned activations as extra outputs.
    public init(_ quantizer: StaticQuantizer, threads: Int? = nil) throws(InferenceError) {
        let model = try quantizer.calibrationModel()
        session = try InferenceSession(model: model, batchSize: 1, threads: threads)
        activations = quantizer.activations
        let inputs = Set(model.inputNames), outputs = model.graph.outputs
        sources = activations.map { inputs.contains($0) ? nil : outputs.firstIndex(of: $0) }
        histograms = Array(repeating: ValueHistogram(), count: activations.count)
        channelSums = Array(repeating: [], count: activations.count)
    }

    /// The model's input shape (batch 1).
    public var inputShape: [Int] { session.inputShape }

    /// Runs one input of `inputShape` through the model and adds the values of every activation.
    public func observe(_ input: [Float]) throws(InferenceError) {
        let outputs = try session.run(Tensor(shape: session.inputShape, data: input))
        for (index, source) in sources.enumerated() {
            let shape = source.map { outputs[$0].shape } ?? session.inputShape
            let values = source.map { outputs[$0].data } ?? input
            values.withUnsafeBufferPointer { histograms[index].add($0) }
            guard shape.count >= 2, shape[0] == 1, shape[1] > 0 else { continue }
            let inner = values.count / shape[1]
            if channelSums[index].isEmpty { channelSums[index] = Array(repeating: 0, count: shape[1]) }
            for c in 0..<shape[1] { channelSums[index][c] += values[(c * inner)..<((c + 1) * inner)].reduce(0) { $0 + Double($1) } / Double(inner) }
        }
        images += 1
    }

    /// Each activation's mean per channel (axis 1) over the images, for bias correction.
    public func channelMeans() -> [String: [Float]] {
        var means: [String: [Float]] = [:]
        for (name, sums) in zip(activations, channelSums) where !sums.isEmpty && images > 0 {
            means[name] = sums.map { Float($0 / Double(images)) }
        }
        return means
    }

    /// Each activation's range by `method`; activations that never held a finite value are left out.
    public func ranges(_ method: CalibrationMethod) -> [String: ClosedRange<Float>] {
        var ranges: [String: ClosedRange<Float>] = [:]
        for (name, histogram) in zip(activations, histograms) { ranges[name] = histogram.range(method) }
        return ranges
    }
}
