import Foundation

/// One pool's minute of the last hour (kiroku.dashboard_history): jobs finished, and queue waits.
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
    /// The SHA-256 of the model file (nil: the service did not say).
    public var modelSHA256: String?
    /// Threads, version and the instance type it reported.
    public var cores: Int, version: String, instanceType: String?
    /// Its measured speed within the last hour.
    public var imagesPerSecond: Double?
    /// When it started and when it was last heard from.
    public var startedAt: Date, lastSeen: Date
}

/// One pool's failures of the last hour in one stored category (kiroku.dashboard_failures).
public struct FailureCategory: Sendable, Equatable, Codable {
    /// The pool, the stored error (a category) and its kind (permanent, exhausted, refused).
    public var pool: String, category: String, kind: String?
    /// Jobs, the latest's time, and the latest five ids.
    public var jobs: Int, latestAt: Date, latestIds: [Int64]
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

/// What the dashboard reads beyond the pool measurements: views of aggregates that a
/// kiroku_viewer login may read, never a job's URI, image or result.
extension JobQueue {
    /// Per pool and minute over the last hour.
    public func poolMinutes() throws(PostgresError) -> [PoolMinute] {
        try connection.query("SELECT * FROM kiroku.dashboard_history ORDER BY pool, minute").map { row throws(PostgresError) in
            PoolMinute(pool: try row.string("pool"), minute: try row.date("minute"), succeeded: Int(try row.int("succeeded")),
                       failed: Int(try row.int("failed")), waitP50: try row.optionalDouble("wait_p50"), waitP95: try row.optionalDouble("wait_p95"))
        }
    }

    /// Live workers with their model's hash and speed.
    public func workerSummaries() throws(PostgresError) -> [WorkerSummary] {
        try connection.query("SELECT * FROM kiroku.dashboard_workers ORDER BY pool, host, id").map { row throws(PostgresError) in
            WorkerSummary(id: try row.string("id"), host: try row.string("host"), pool: try row.string("pool"), model: try row.string("model"),
                          modelSHA256: try row.optionalString("model_sha256"), cores: Int(try row.int("cores")),
                          version: try row.string("version"), instanceType: try row.optionalString("instance_type"),
                          imagesPerSecond: try row.optionalDouble("images_per_second"), startedAt: try row.date("started_at"),
                          lastSeen: try row.date("last_seen"))
        }
    }

    /// Failures of the last hour by pool and category, most first.
    public func failureCategories() throws(PostgresError) -> [FailureCategory] {
        try connection.query("""
            SELECT pool, category, kind, jobs, latest_at, array_to_string(latest_ids, ',') AS ids
            FROM kiroku.dashboard_failures ORDER BY jobs DESC, pool, category
            """).map { row throws(PostgresError) in
            FailureCategory(pool: try row.string("pool"), category: try row.string("category"), kind: try row.optionalString("kind"),
                            jobs: Int(try row.int("jobs")), latestAt: try row.date("latest_at"),
                            latestIds: try row.string("ids").split(separator: ",").compactMap { Int64($0) })
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
