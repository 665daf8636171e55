import Foundation

/// The lifecycle states of a job, as stored in kiroku.jobs.state: scheduled (its run_after lies
/// ahead, a delayed job or a retry in backoff), queued (due, waiting for a claim), running, and
/// the three finished states.
public enum JobState: String, Sendable, CaseIterable {
    case scheduled, queued, running, succeeded, failed, cancelled
}

/// Where a job's image comes from.
public enum ImageSource: Sendable, Equatable {
    /// The image bytes, stored in the database.
    case inline([UInt8])
    /// A file://, http:// or https:// URI the worker fetches.
    case uri(String)
}

/// A job to enqueue. Nil fields take the SQL functions' defaults.
public struct NewJob: Sendable {
    /// The image, inline or by URI.
    public var image: ImageSource
    /// The model name; nil means 'default'.
    public var model: String?
    /// Higher runs first; nil means 0.
    public var priority: Int?
    /// The pool that should run it; nil lets the queue choose.
    public var pool: String?
    /// At most one unfinished job holds a given key; nil means no deduplication.
    public var idempotencyKey: String?
    /// Not before this time; nil means now.
    public var runAfter: Date?

    /// Creates a job description.
    public init(image: ImageSource, model: String? = nil, priority: Int? = nil, pool: String? = nil,
                idempotencyKey: String? = nil, runAfter: Date? = nil) {
        self.image = image
        self.model = model
        self.priority = priority
        self.pool = pool
        self.idempotencyKey = idempotencyKey
        self.runAfter = runAfter
    }
}

/// The outcome of enqueueing one job.
public struct EnqueuedJob: Sendable, Equatable {
    /// The job id.
    public let id: Int64
    /// False when an unfinished job with the same idempotency key already existed (its id is `id`).
    public let created: Bool
}

/// A worker's hold on one claimed job: the job id and the random lease token the claim returned.
/// Heartbeat, complete, fail and release need the token; the table keeps only its SHA-256, so no
/// other login can act on this lease.
public struct JobLease: Sendable, Hashable {
    /// The job id.
    public let id: Int64
    /// The lease token (hex), known only to the claimer.
    public let token: String

    /// Creates a lease.
    public init(id: Int64, token: String) {
        self.id = id
        self.token = token
    }
}

/// A job a worker has claimed: it holds the lease for this attempt.
public struct ClaimedJob: Sendable, Equatable {
    /// The job id and the lease token that fences heartbeat, complete, fail and release.
    public let lease: JobLease
    /// The attempt number this claim holds (attempts only grow).
    public let attempt: Int
    /// The model the job asks for.
    public let model: String
    /// Inline image bytes, when the job has them.
    public let image: [UInt8]?
    /// The image URI, when the job has one.
    public let imageURI: String?
    /// When the job was enqueued.
    public let enqueuedAt: Date

    /// The job id.
    public var id: Int64 { lease.id }
}

/// A job's outcome to store with `JobQueue.complete(_:)`.
public struct JobCompletion: Sendable {
    /// The lease that produced the result.
    public let lease: JobLease
    /// The result document (JSON text, an object).
    public let resultJSON: String

    /// Creates a completion.
    public init(lease: JobLease, resultJSON: String) {
        self.lease = lease
        self.resultJSON = resultJSON
    }
}
