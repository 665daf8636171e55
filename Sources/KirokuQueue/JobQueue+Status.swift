import Foundation

/// One pool's queue depth (kiroku.queue_depth).
public struct QueueDepth: Sendable, Equatable {
    /// The pool.
    public var pool: String
    /// Jobs due and waiting, jobs scheduled for later, jobs claimed.
    public var ready: Int, scheduled: Int, running: Int
    /// When the next scheduled job comes due, and how many come due within the hour.
    public var nextDueAt: Date?, dueWithinHour: Int
    /// How long the oldest due job has waited, seconds.
    public var oldestQueuedAgeSeconds: Double
}

/// One pool's last five minutes (kiroku.recent_throughput).
public struct RecentThroughput: Sendable, Equatable {
    /// The pool.
    public var pool: String
    /// Jobs finished, and per second.
    public var finished: Int, jobsPerSecond: Double
    /// Mean seconds from claim to finish, and from due to claim.
    public var meanServiceSeconds: Double?, meanWaitSeconds: Double?
}

/// A registered worker seen in the last two minutes.
public struct LiveWorker: Sendable, Equatable, Codable {
    /// Its id, host, pool and model.
    public var id: String, host: String, pool: String, model: String
    /// Its threads and version.
    public var cores: Int, version: String
    /// When it started and when it was last heard from.
    public var startedAt: Date, lastSeen: Date
}

/// What `kiroku status` and the worker's metrics read.
extension JobQueue {
    /// Jobs per pool and state.
    public func jobCounts() throws(PostgresError) -> [(pool: String, state: String, count: Int)] {
        try connection.query("SELECT pool, state, count(*) AS jobs FROM kiroku.jobs GROUP BY pool, state").map { row throws(PostgresError) in
            (try row.string("pool"), try row.string("state"), Int(try row.int("jobs")))
        }
    }

    /// Every pool's depth, or one pool's.
    public func queueDepths(pool: String? = nil) throws(PostgresError) -> [QueueDepth] {
        try connection.query("""
            SELECT pool, ready, scheduled, running, next_due_at, due_within_hour, extract(epoch FROM oldest_queued_age)::float8 AS oldest
            FROM kiroku.queue_depth WHERE $1::text IS NULL OR pool = $1
            """, [pool.map(PostgresBind.text) ?? .null]).map { row throws(PostgresError) in
            QueueDepth(pool: try row.string("pool"), ready: Int(try row.int("ready")), scheduled: Int(try row.int("scheduled")),
                       running: Int(try row.int("running")), nextDueAt: try row.optionalDate("next_due_at"),
                       dueWithinHour: Int(try row.int("due_within_hour")), oldestQueuedAgeSeconds: try row.double("oldest"))
        }
    }

    /// Every pool's last five minutes.
    public func recentThroughput() throws(PostgresError) -> [RecentThroughput] {
        try connection.query("SELECT * FROM kiroku.recent_throughput").map { row throws(PostgresError) in
            RecentThroughput(pool: try row.string("pool"), finished: Int(try row.int("finished")), jobsPerSecond: try row.double("jobs_per_second"),
                             meanServiceSeconds: try row.optionalDouble("mean_service_seconds"),
                             meanWaitSeconds: try row.optionalDouble("mean_wait_seconds"))
        }
    }

    /// Registered workers not stopped and seen in the last two minutes.
    public func liveWorkers() throws(PostgresError) -> [LiveWorker] {
        try connection.query("""
            SELECT id, host, pool, model, cores, version, started_at, last_seen
            FROM kiroku.workers
            WHERE stopped_at IS NULL AND last_seen > now() - interval '2 minutes'
            ORDER BY pool, host, id
            """).map { row throws(PostgresError) in
            LiveWorker(id: try row.string("id"), host: try row.string("host"), pool: try row.string("pool"), model: try row.string("model"),
                       cores: Int(try row.int("cores")), version: try row.string("version"), startedAt: try row.date("started_at"),
                       lastSeen: try row.date("last_seen"))
        }
    }

}
