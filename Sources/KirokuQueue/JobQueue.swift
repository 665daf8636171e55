import Foundation
import Logging

/// The queue protocol from Swift. Every operation is one call of the SQL functions that the
/// migrations define (kiroku.enqueue, kiroku.claim, ...): the logic lives in SQL only.
public final class JobQueue {
    /// The connection the queue talks through (owned by the caller's thread or task).
    public let connection: PostgresConnection
    private var listening = false

    /// The notification channel announcing new runnable jobs (payload: the pool).
    public static let jobsChannel = "kiroku_jobs"
    /// The notification channel announcing finished jobs (payload: the job id).
    public static let resultsChannel = "kiroku_results"

    /// Wraps a connection.
    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    // MARK: Producers

    /// Enqueues one job; returns its id (an existing unfinished job's id for a known idempotency key).
    public func enqueue(_ job: NewJob) throws(PostgresError) -> Int64 {
        try enqueue(batch: [job])[0].id
    }

    /// Enqueues jobs in one statement (kiroku.enqueue_many: one round trip, one set-based INSERT);
    /// returns their ids in order, each marked new or already queued (same idempotency key).
    public func enqueue(batch jobs: [NewJob]) throws(PostgresError) -> [EnqueuedJob] {
        guard !jobs.isEmpty else { return [] }
        let images = jobs.map { job -> PostgresBind in
            if case .inline(let bytes) = job.image { return .bytea(bytes) }
            return .null
        }
        let uris = jobs.map { job -> PostgresBind in
            if case .uri(let uri) = job.image { return .text(uri) }
            return .null
        }
        let rows = try connection.query(
            "SELECT ordinal, job_id, created FROM kiroku.enqueue_many($1::bytea[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::text[], $7::timestamptz[])",
            [
                .array(.bytea, images),
                .array(.text, uris),
                .array(.text, jobs.map { $0.model.map(PostgresBind.text) ?? .null }),
                .array(.int4, jobs.map { $0.priority.map { .int(Int64($0)) } ?? .null }),
                .array(.text, jobs.map { $0.pool.map(PostgresBind.text) ?? .null }),
                .array(.text, jobs.map { $0.idempotencyKey.map(PostgresBind.text) ?? .null }),
                .array(.timestamptz, jobs.map { $0.runAfter.map(PostgresBind.timestamp) ?? .null }),
            ])
        var enqueued = [EnqueuedJob](repeating: EnqueuedJob(id: 0, created: false), count: jobs.count)
        for row in rows {
            enqueued[Int(try row.int("ordinal")) - 1] = EnqueuedJob(id: try row.int("job_id"), created: try row.bool("created"))
        }
        return enqueued
    }

    /// Cancels a queued or running job; false when it was neither.
    public func cancel(jobID: Int64) throws(PostgresError) -> Bool {
        try connection.query("SELECT kiroku.cancel($1) AS ok", [.int(jobID)]).single("cancel").bool("ok")
    }

    /// Puts a failed or cancelled job back in the queue with fresh attempts; false when it was
    /// neither, or another unfinished job holds its idempotency key.
    public func requeue(jobID: Int64) throws(PostgresError) -> Bool {
        try connection.query("SELECT kiroku.requeue($1) AS ok", [.int(jobID)]).single("requeue").bool("ok")
    }

    /// Replaces the routing weights (kiroku.set_routes): jobs without a pool go to a pool with
    /// probability weight / total; no routes means 'cpu'.
    public func setRoutes(_ routes: [(pool: String, weight: Int)]) throws(PostgresError) {
        try connection.query("SELECT kiroku.set_routes($1::text[], $2::int4[])",
                             [.array(.text, routes.map { .text($0.pool) }), .array(.int4, routes.map { .int(Int64($0.weight)) })])
    }

    /// The routing weights, by pool name.
    public func routes() throws(PostgresError) -> [(pool: String, weight: Int)] {
        try connection.query("SELECT pool, weight FROM kiroku.routes ORDER BY pool").map { row throws(PostgresError) in
            (try row.string("pool"), Int(try row.int("weight")))
        }
    }

    // MARK: Workers

    /// The most inline image bytes one claim takes by default (kiroku.claim's max_bytes).
    public static let defaultClaimBytes = 64 << 20

    /// Claims up to `maxJobs` runnable jobs of `pool` for `workerID`, each leased for `lease`
    /// (1 second to 1 hour), their inline images adding up to at most `maxBytes` (the first job
    /// is taken whatever its size).
    public func claim(workerID: String, pool: String, maxJobs: Int, lease: Duration,
                      maxBytes: Int = JobQueue.defaultClaimBytes) throws(PostgresError) -> [ClaimedJob] {
        let rows = try connection.query(
            "SELECT job_id, attempt, lease_token, model, image, image_uri, enqueued_at FROM kiroku.claim($1, $2, $3, $4::interval, $5)",
            [.text(workerID), .text(pool), .int(Int64(maxJobs)), .text(Self.interval(lease)), .int(Int64(maxBytes))])
        return try rows.map { row throws(PostgresError) in
            ClaimedJob(
                lease: JobLease(id: try row.int("job_id"), token: try row.string("lease_token")),
                attempt: Int(try row.int("attempt")),
                model: try row.string("model"),
                image: try row.optionalBytes("image"),
                imageURI: try row.optionalString("image_uri"),
                enqueuedAt: try row.date("enqueued_at"))
        }
    }

    /// Extends the `leases` still held (renewing `workerID`'s last_seen); returns how many it extended.
    @discardableResult
    public func heartbeat(workerID: String, leases: [JobLease], lease: Duration) throws(PostgresError) -> Int {
        Int(try connection.query(
            "SELECT kiroku.heartbeat($1, $2::int8[], $3::text[], $4::interval) AS extended",
            [.text(workerID), .array(.int8, leases.map { .int($0.id) }), .array(.text, leases.map { .text($0.token) }),
             .text(Self.interval(lease))]
        ).single("heartbeat").int("extended"))
    }

    /// Stores results in one statement (kiroku.complete_many: one transaction, one UPDATE). For
    /// each, false when its lease was no longer held (fenced): nothing was written for it.
    public func complete(_ completions: [JobCompletion]) throws(PostgresError) -> [Bool] {
        guard !completions.isEmpty else { return [] }
        let rows = try connection.query(
            "SELECT stored FROM kiroku.complete_many($1::int8[], $2::text[], $3::jsonb[])", [
                .array(.int8, completions.map { .int($0.lease.id) }),
                .array(.text, completions.map { .text($0.lease.token) }),
                .array(.jsonb, completions.map { .text($0.resultJSON) }),
            ])
        return try rows.map { row throws(PostgresError) in try row.bool("stored") }
    }

    /// Stores one result; false when its lease was no longer held.
    public func complete(_ lease: JobLease, resultJSON: String) throws(PostgresError) -> Bool {
        try complete([JobCompletion(lease: lease, resultJSON: resultJSON)])[0]
    }

    /// Records a failed attempt; returns the job's new state (scheduled for a retry after its
    /// backoff, or failed), or nil when the lease was no longer held. `refused` marks a job the
    /// fetch policy refused (failed for good, error_kind 'refused'). `error` is what producers read: a category.
    public func fail(_ lease: JobLease, error: String, retryable: Bool, refused: Bool = false) throws(PostgresError) -> JobState? {
        let row = try connection.query(
            "SELECT kiroku.fail($1, $2, $3, $4, $5) AS state",
            [.int(lease.id), .text(lease.token), .text(error), .bool(retryable), .bool(refused)]
        ).single("fail")
        return try row.optionalString("state").flatMap(JobState.init(rawValue:))
    }

    /// Hands back claimed jobs this worker will not start (kiroku.release): queued again at once,
    /// the claim's attempt credited. Returns how many leases were still held and handed back.
    @discardableResult
    public func release(_ leases: [JobLease]) throws(PostgresError) -> Int {
        guard !leases.isEmpty else { return 0 }
        return Int(try connection.query(
            "SELECT kiroku.release($1::int8[], $2::text[]) AS released",
            [.array(.int8, leases.map { .int($0.id) }), .array(.text, leases.map { .text($0.token) })]
        ).single("release").int("released"))
    }

    /// Returns running jobs whose lease expired to the queue (or fails them when out of attempts).
    @discardableResult
    public func rescueExpired() throws(PostgresError) -> Int {
        Int(try connection.query("SELECT kiroku.rescue_expired() AS rescued").single("rescue_expired").int("rescued"))
    }

    /// Moves up to `maxJobs` scheduled jobs that have come due to the queue, earliest first, and
    /// wakes their pools' workers; returns how many moved. Safe to run from many workers at once.
    @discardableResult
    public func promoteDue(maxJobs: Int = JobQueue.promotionBatch) throws(PostgresError) -> Int {
        Int(try connection.query("SELECT kiroku.promote_due($1) AS promoted", [.int(Int64(maxJobs))]).single("promote_due").int("promoted"))
    }

    /// The jobs one promotion moves at most: each batch is one short transaction.
    public static let promotionBatch = 1000

    /// Records a worker process start in kiroku.workers, with the SHA-256 (hex) of the model it
    /// serves and the precision it runs it at on this CPU (float32, int8 or mixed).
    public func registerWorker(id: String, host: String, pool: String, model: String, modelSHA256: String, cores: Int,
                               version: String, precision: String = "float32") throws(PostgresError) {
        try connection.query("SELECT kiroku.register_worker($1, $2, $3, $4, $5, $6, $7, $8)",
                             [.text(id), .text(host), .text(pool), .text(model), .int(Int64(cores)), .text(version), .text(modelSHA256),
                              .text(precision)])
    }

    /// Records a worker's instance type and measured speed (nil leaves either as it was).
    public func reportWorkerSpeed(id: String, instanceType: String?, imagesPerSecond: Double?) throws(PostgresError) {
        try connection.query("SELECT kiroku.report_worker_speed($1, $2, $3)",
                             [.text(id), instanceType.map(PostgresBind.text) ?? .null, imagesPerSecond.map(PostgresBind.double) ?? .null])
    }

    /// Marks a worker as stopped.
    public func deregisterWorker(id: String) throws(PostgresError) {
        try connection.query("SELECT kiroku.deregister_worker($1)", [.text(id)])
    }

    /// Waits until new jobs may be runnable in `pool` or `timeout` passes: LISTENs on
    /// kiroku_jobs (once) and sleeps on the connection's socket, so an idle worker costs nothing
    /// and wakes within milliseconds of an enqueue. True when notified; false on timeout, after
    /// which the caller claims anyway (a slow fallback poll covers lost notifications).
    public func waitForJobs(pool: String, timeout: Duration) throws(PostgresError) -> Bool {
        if !listening {
            try connection.listen(Self.jobsChannel)
            listening = true
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero,
                  let notification = try connection.waitForNotification(timeout: remaining) else { return false }
            if notification.channel == Self.jobsChannel && notification.payload == pool { return true }
        }
    }

    /// A Duration as a PostgreSQL interval literal.
    static func interval(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        return "\(microseconds) microseconds"
    }
}
