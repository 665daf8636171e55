import Foundation
import KirokuQueue
import KirokuVision

/// A claimed job on its way through the pipeline, from the feeder to the inference loop.
struct PreparedJob: Sendable {
    /// What the feeder made of the job.
    enum Input: Sendable {
        /// The input tensor, ready for the model.
        case ready([Float])
        /// The job cannot run: its failure to record.
        case failed(JobFailure)
        /// Claimed but not started before shutdown: hand it back.
        case handBack
    }

    let job: ClaimedJob
    /// Which claim the job came in (results are written per claim) and how many jobs it had.
    let batch: Int, batchSize: Int
    /// When this worker claimed it.
    let claimedAt: ContinuousClock.Instant, claimedDate: Date
    let input: Input
    let fetchMs: Double, decodeMs: Double
}

/// Why a job failed, and whether another attempt may succeed.
struct JobFailure: Error, Sendable {
    /// What the job's stored error says (producers read it): a category, no content.
    let reason: String
    /// The whole story, for the worker's log.
    let detail: String
    let retryable: Bool
    /// The fetch policy refused the image (error_kind 'refused').
    var refused = false

    /// A failure to fetch the image.
    init(_ error: FetchError) {
        (reason, detail, retryable, refused) = ("\(error.reason)", error.detail, error.retryable, error.isRefusal)
    }

    /// An image that could not be decoded: its kind is stored, the decoder's words are logged.
    init(_ error: ImageError) {
        let reason = switch error.kind {
        case .truncated: "truncated image"
        case .corrupt: "not an image"
        case .unsupported: "unsupported image format"
        case .tooLarge: "image too large"
        }
        (self.reason, detail, retryable) = (reason, error.description, false)
    }

    /// A failure that is neither: a category stored, the detail (by default the same words) logged.
    init(reason: String, detail: String? = nil, retryable: Bool) {
        (self.reason, self.detail, self.retryable) = (reason, detail ?? reason, retryable)
    }
}

/// What became of a job, as written back to the database.
enum JobOutcome: Sendable {
    case succeeded(resultJSON: String)
    case failed(JobFailure)
    case handBack
}

/// What a worker did, by outcome (printed by `kiroku worker --once`).
public struct WorkerSummary: Sendable, Equatable, Codable {
    /// Results stored.
    public var succeeded = 0
    /// Failed for good (bad image, missing file, ...).
    public var failed = 0
    /// Failed for now; queued again with a backoff.
    public var retried = 0
    /// Claimed but not started at shutdown; returned to the queue.
    public var handedBack = 0
    /// The lease had passed to another worker: nothing was written.
    public var fenced = 0

    /// Creates an empty summary.
    public init() {}

    /// Adds another summary's counts to this one.
    public mutating func add(_ other: WorkerSummary) {
        succeeded += other.succeeded
        failed += other.failed
        retried += other.retried
        handedBack += other.handedBack
        fenced += other.fenced
    }

    /// The counts by outcome name, as the metrics label them.
    public var byOutcome: [(String, Int)] {
        [("succeeded", succeeded), ("failed", failed), ("retried", retried), ("handed_back", handedBack), ("fenced", fenced)]
    }
}
