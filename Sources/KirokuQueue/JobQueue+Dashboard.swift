import Foundation

/// One pool's depth (kiroku.dashboard_depth), each count from its own partial index.
public struct PoolDepth: Sendable, Equatable, Codable {
    /// The pool.
    public var pool: String
    /// Jobs due and waiting, scheduled for later, and running.
    public var ready: Int, scheduled: Int, running: Int
    /// Seconds the oldest due job has waited (0 when none).
    public var oldestWait: Double
}

/// A job that finished, as the dashboard lists the latest (kiroku.dashboard_latest).
public struct FinishedJob: Sendable, Equatable, Codable {
    /// Its id, pool and state (succeeded, failed, cancelled), and when it finished.
    public var id: Int64, pool: String, state: String, finishedAt: Date
    /// Seconds it waited from due to claim, and from claim to finish (nil when never started).
    public var waitSeconds: Double?, serviceSeconds: Double?
    /// The stored error category of a failed job.
    public var category: String?
}

/// One pool's minute (kiroku.finished_minutes): jobs finished, and queue waits.
public struct PoolMinute: Sendable, Equatable, Codable {
    /// The pool, and the minute's start.
    public var pool: String, minute: Date
    /// Jobs that succeeded and failed in the minute.
    public var succeeded: Int, failed: Int
    /// Queue-wait percentiles of those jobs, seconds (nil when none had started).
    public var waitP50: Double?, waitP95: Double?
}

/// A live worker as the dashboard shows it (kiroku.dashboard_workers).
public struct WorkerSummary: Sendable, Equatable, Codable {
    /// Its id, host, pool and model name.
    public var id: String, host: String, pool: String, model: String
    /// The SHA-256 of the model file, and the precision it runs at (nil: the service did not say).
    public var modelSHA256: String?, precision: String?
    /// Threads, version and the instance type it reported.
    public var cores: Int, version: String, instanceType: String?
    /// Its measured speed within the last hour.
    public var imagesPerSecond: Double?
    /// When it started and when it was last heard from.
    public var startedAt: Date, lastSeen: Date
}

/// One pool's failures in one minute and stored category (kiroku.failure_minutes).
public struct FailureMinute: Sendable, Equatable, Codable {
    /// The pool, the minute, the stored error (a category) and its kind (permanent, exhausted, refused).
    public var pool: String, minute: Date, category: String, kind: String?
    /// Jobs, and the latest five ids.
    public var jobs: Int, latestIds: [Int64]
}

/// The autoscaler's latest recommendation for a pool within the hour (kiroku.dashboard_recommendations).
public struct LatestRecommendation: Sendable, Equatable, Codable {
    /// The pool, when it was made, and for which instance type.
    public var pool: String, madeAt: Date, instanceType: String
    /// Hosts the objective needs, the recommendation, and what was published after stabilisation.
    public var desired: Int, recommended: Int, stabilised: Int
    /// Hosts seen running then.
    public var live: Double?
}

/// What the dashboard reads: views and functions of aggregates that a kiroku_viewer login may
/// read, never a job's URI, image or result, each bound by an index.
extension JobQueue {
    /// Ends any statement of this session that runs longer than `seconds` (the dashboard sets it
    /// on its connection, whichever role it logs in as).
    public func limitStatements(seconds: Int) throws(PostgresError) {
        try connection.query("SELECT set_config('statement_timeout', $1, false)", [.text("\(seconds)s")])
    }

    /// The database's clock, and the latest minute boundary at least `settle` seconds past: minutes
    /// before it are closed (a job's finish time is its transaction's start, so a few seconds late).
    public func minuteBoundary(settle: Double) throws(PostgresError) -> (now: Date, closed: Date) {
        let row = try connection.query("SELECT now() AS now, date_bin('1 minute', now() - make_interval(secs => $1), 'epoch') AS closed",
                                       [.double(settle)]).single("now")
        return (try row.date("now"), try row.date("closed"))
    }

    /// Every pool's depth.
    public func poolDepths() throws(PostgresError) -> [PoolDepth] {
        try connection.query("SELECT * FROM kiroku.dashboard_depth ORDER BY pool").map { row throws(PostgresError) in
            PoolDepth(pool: try row.string("pool"), ready: Int(try row.int("ready")), scheduled: Int(try row.int("scheduled")),
                      running: Int(try row.int("running")), oldestWait: try row.double("oldest_wait"))
        }
    }

    /// The last 20 jobs finished, newest first.
    public func latestFinished() throws(PostgresError) -> [FinishedJob] {
        try connection.query("SELECT * FROM kiroku.dashboard_latest").map { row throws(PostgresError) in
            FinishedJob(id: try row.int("id"), pool: try row.string("pool"), state: try row.string("state"), finishedAt: try row.date("finished_at"),
                        waitSeconds: try row.optionalDouble("wait_seconds"), serviceSeconds: try row.optionalDouble("service_seconds"),
                        category: try row.optionalString("category"))
        }
    }

    /// Per pool and minute in [from, to).
    public func finishedMinutes(from: Date, to: Date) throws(PostgresError) -> [PoolMinute] {
        try connection.query("SELECT * FROM kiroku.finished_minutes($1, $2) ORDER BY pool, minute", [.timestamp(from), .timestamp(to)]).map { row throws(PostgresError) in
            PoolMinute(pool: try row.string("pool"), minute: try row.date("minute"), succeeded: Int(try row.int("succeeded")),
                       failed: Int(try row.int("failed")), waitP50: try row.optionalDouble("wait_p50"), waitP95: try row.optionalDouble("wait_p95"))
        }
    }

    /// Failures in [from, to) per pool, minute and category.
    public func failureMinutes(from: Date, to: Date) throws(PostgresError) -> [FailureMinute] {
        try connection.query("""
            SELECT pool, minute, category, kind, jobs, array_to_string(latest_ids, ',') AS ids FROM kiroku.failure_minutes($1, $2)
            """, [.timestamp(from), .timestamp(to)]).map { row throws(PostgresError) in
            FailureMinute(pool: try row.string("pool"), minute: try row.date("minute"), category: try row.string("category"),
                          kind: try row.optionalString("kind"), jobs: Int(try row.int("jobs")),
                          latestIds: try row.string("ids").split(separator: ",").compactMap { Int64($0) })
        }
    }

    /// Live workers with their model's hash and speed.
    public func workerSummaries() throws(PostgresError) -> [WorkerSummary] {
        try connection.query("SELECT * FROM kiroku.dashboard_workers ORDER BY pool, host, id").map { row throws(PostgresError) in
            WorkerSummary(id: try row.string("id"), host: try row.string("host"), pool: try row.string("pool"), model: try row.string("model"),
                          modelSHA256: try row.optionalString("model_sha256"), precision: try row.optionalString("model_precision"), cores: Int(try row.int("cores")),
                          version: try row.string("version"), instanceType: try row.optionalString("instance_type"),
                          imagesPerSecond: try row.optionalDouble("images_per_second"), startedAt: try row.date("started_at"),
                          lastSeen: try row.date("last_seen"))
        }
    }

    /// The autoscaler's latest recommendation per pool within the hour.
    public func latestRecommendations() throws(PostgresError) -> [LatestRecommendation] {
        try connection.query("SELECT * FROM kiroku.dashboard_recommendations ORDER BY pool").map { row throws(PostgresError) in
            LatestRecommendation(pool: try row.string("pool"), madeAt: try row.date("made_at"), instanceType: try row.string("instance_type"),
                                 desired: Int(try row.int("desired")), recommended: Int(try row.int("recommended")),
                                 stabilised: Int(try row.int("stabilised")), live: try row.optionalDouble("live"))
        }
    }
}
