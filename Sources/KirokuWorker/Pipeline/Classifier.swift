import Foundation
import KirokuInference
import KirokuQueue
import KirokuSupport
import KirokuVision

/// The model side of a worker: one `InferenceSession`, built once, warmed, and reused for every
/// job, with the decoder and preprocessing its sidecar describes. Decoding and inference take
/// turns on one serial queue: the session already uses every core it is given, and a decode
/// beside it only slows it (measured on 2 cores: the worker at 88% of `kiroku classify`'s rate
/// with the two overlapped, 95–97% taking turns; Benchmarks/RESULTS.md).
public final class Classifier: @unchecked Sendable {
    /// The model's name (from its sidecar).
    public let modelName: String
    /// The SHA-256 of the model file, in hex: which weights produced a result.
    public let modelHash: String
    /// The inference threads the session uses.
    public let threads: Int
    /// Floats in one prepared image.
    public let floatsPerImage: Int
    /// Which of an int8 model's layers this CPU runs on integer kernels (chosen at load).
    public let integerLayers: IntegerLayers
    private let sidecar: ModelSidecar
    /// How JPEGs are decoded before the resize.
    public let decodeScale: DecodeScale
    private let preprocessor: ImagePreprocessor
    /// Confined to `computeQueue`.
    private let decoder: JPEGDecoder
    /// Confined to `computeQueue`.
    private let session: InferenceSession
    private let computeQueue = BlockingQueue(label: "kiroku.compute")

    /// Loads the model and its sidecar and builds the session (batch 1: each image is classified as
    /// soon as it is ready, never held back to fill a batch).
    public init(model: URL, threads: Int?, decodeLimits: DecodeLimits, decodeScale: DecodeScale = .reduced,
                integerLayers: IntegerLayerChoice = .measured) throws {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: model)
        } catch {
            throw InferenceError(.malformedModel, "cannot read model \(model.path): \(error.localizedDescription)")
        }
        sidecar = try ModelSidecar(model: model)
        self.decodeScale = decodeScale
        preprocessor = ImagePreprocessor(sidecar: sidecar, decodeScale: decodeScale)
        session = try InferenceSession(model: try Model(serialized: bytes, name: model.lastPathComponent), batchSize: 1, threads: threads,
                                       integerLayers: integerLayers)
        modelName = sidecar.name
        modelHash = SHA256.hex(bytes)
        self.threads = session.threads
        self.integerLayers = session.integerLayers
        floatsPerImage = preprocessor.floatsPerImage
        decoder = JPEGDecoder(limits: decodeLimits)
    }

    /// True when a job asking for `model` may run here: 'default', or the sidecar's model name.
    public func serves(model requested: String) -> Bool {
        requested == "default" || requested == modelName
    }

    /// Decodes and preprocesses one image into a new input buffer on the compute queue, with the
    /// milliseconds that took (not counting the wait for the queue).
    public func prepare(_ bytes: [UInt8]) async throws(ImageError) -> (input: [Float], milliseconds: Double) {
        try await computeQueue.run { () throws(ImageError) -> (input: [Float], milliseconds: Double) in
            let started = ContinuousClock.now
            var input = [Float](repeating: 0, count: self.floatsPerImage)
            try input.withUnsafeMutableBufferPointer { buffer throws(ImageError) in
                try self.preprocessor.prepare(bytes, decoder: self.decoder, into: buffer)
            }
            return (input, started.duration(to: .now).milliseconds)
        }
    }

    /// Classifies one prepared image on the compute queue, with the milliseconds that took (not
    /// counting the wait for the queue).
    public func classify(_ input: [Float], top: Int) async -> (classification: ModelSidecar.Classification, milliseconds: Double) {
        await computeQueue.run {
            let started = ContinuousClock.now
            let classification = self.session.run(
                fill: { destination in input.withUnsafeBufferPointer { _ = destination.update(fromContentsOf: $0) } },
                read: { self.sidecar.classify(logits: $0, top: top) })
            return (classification, started.duration(to: .now).milliseconds)
        }
    }

    /// Runs one inference on a mid-grey image, so the first job does not pay for first-touch page
    /// faults and lazy initialisation; returns how long it took.
    public func warmUp() async -> Duration {
        let started = ContinuousClock.now
        _ = await classify([Float](repeating: 0, count: floatsPerImage), top: 1)
        return started.duration(to: .now)
    }
}
