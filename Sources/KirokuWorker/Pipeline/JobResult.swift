import Foundation
import KirokuVision

/// The result document stored with a succeeded job (kiroku.jobs.result; `timings` is also copied
/// to kiroku.jobs.timings). Keys are snake_case.
public struct JobResult: Codable, Sendable, Equatable {
    /// The model that produced the result.
    public struct ModelIdentity: Codable, Sendable, Equatable {
        /// The model's name (its sidecar's).
        public var name: String
        /// The SHA-256 of the model file, hex.
        public var sha256: String
    }

    /// Where the time went for this job, in milliseconds.
    public struct Timings: Codable, Sendable, Equatable {
        /// From enqueue to claim (the worker's clock against the database's enqueue time).
        public var queueWaitMs: Double
        /// Reading the image: inline (0), file or http(s).
        public var fetchMs: Double
        /// Decode, orientation, crop, resize, normalisation.
        public var decodeMs: Double
        /// The model.
        public var inferenceMs: Double
        /// From claim to result (fetch, decode, waiting in the pipeline, inference).
        public var totalMs: Double
    }

    /// The highest-scoring labels, best first.
    public var top: [ModelSidecar.Prediction]
    /// The food verdict: food_score ≥ 0.5.
    public var food: Bool
    /// The summed probability of the model's food classes.
    public var foodScore: Float
    /// The model that produced it.
    public var model: ModelIdentity
    /// How the JPEG was decoded (`reduced` or `full`): the shadow comparison names each pool's.
    public var decode: String
    /// The precision the model ran at on this worker's CPU: float32, int8, or mixed (some of an
    /// int8 model's layers on float kernels, where this CPU runs them faster).
    public var precision: String
    /// The pool the job ran in.
    public var pool: String
    /// The worker process that ran it.
    public var workerId: String
    /// The attempt that produced it.
    public var attempt: Int
    /// Per-stage timings.
    public var timings: Timings

    /// The JSON text stored in the database.
    func json() -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain structs of strings and numbers cannot fail (scores are finite softmax output).
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }
}
