import Foundation

/// What the advisor reads: every pool's arrivals, depth, waits, workers and speed
/// (`kiroku.pool_measurements`, which `kiroku status` and the dashboard read too), the jobs
/// scheduled ahead, and the history its HTML report charts.
extension JobQueue {
    /// One measurement per pool with jobs or workers, in pool order (windows and liveness in seconds).
    public func poolMeasurements(shortWindow: Double, longWindow: Double, liveness: Double) throws(PostgresError) -> [PoolMeasurement] {
        try connection.query("SELECT * FROM kiroku.pool_measurements($1, $2, $3)", [.double(shortWindow), .double(longWindow), .double(liveness)])
            .map(PoolMeasurement.init(row:))
    }

    /// Scheduled jobs coming due within `horizon` seconds, per pool and minute from now.
    public func scheduledPerMinute(horizon: Double) throws(PostgresError) -> [(pool: String, minute: Int, jobs: Int)] {
        try connection.query("""
            SELECT pool, greatest(floor(extract(epoch FROM run_after - now()) / 60), 0)::int AS minute, count(*) AS jobs
            FROM kiroku.jobs WHERE state = 'scheduled' AND run_after < now() + make_interval(secs => $1)
            GROUP BY 1, 2
            """, [.double(horizon)]).map { row throws(PostgresError) in
            (try row.string("pool"), Int(try row.int("minute")), Int(try row.int("jobs")))
        }
    }

    /// Seconds since the first job enqueued within the last `limit` seconds came due (nil: none).
    public func historyAge(limit: Double) throws(PostgresError) -> Double? {
        try connection.query("""
            SELECT extract(epoch FROM now() - min(coalesce(due_at, enqueued_at)))::float8 AS age
            FROM kiroku.jobs WHERE enqueued_at >= now() - make_interval(secs => $1)
            """, [.double(limit)]).single("age").optionalDouble("age")
    }

    /// Per pool and bucket of `bucket` seconds over the last `span`: at, arrivals (per second),
    /// depth (jobs due and not started), latency (enqueue to result p50, seconds).
    public func historyRows(span: Double, bucket: Double) throws(PostgresError) -> PostgresRows {
        try connection.query("""
            WITH b AS (
                SELECT t AS at FROM generate_series(date_bin(make_interval(secs => $2), now() - make_interval(secs => $1), 'epoch'),
                                                   now(), make_interval(secs => $2)) AS t
            ), pools AS (SELECT DISTINCT pool FROM kiroku.jobs WHERE enqueued_at >= now() - make_interval(secs => $1))
            SELECT p.pool, b.at,
                   (SELECT count(*) FROM kiroku.jobs AS j WHERE j.pool = p.pool AND coalesce(j.due_at, j.enqueued_at) >= b.at
                      AND coalesce(j.due_at, j.enqueued_at) < b.at + make_interval(secs => $2))::float8 / $2 AS arrivals,
                   (SELECT count(*) FROM kiroku.jobs AS j WHERE j.pool = p.pool AND coalesce(j.due_at, j.enqueued_at) <= b.at + make_interval(secs => $2)
                      AND j.enqueued_at >= now() - make_interval(secs => $1) - interval '1 day'
                      AND (j.started_at IS NULL OR j.started_at > b.at + make_interval(secs => $2))
                      AND (j.finished_at IS NULL OR j.finished_at > b.at + make_interval(secs => $2)))::float8 AS depth,
                   (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.finished_at - j.enqueued_at))
                      FROM kiroku.jobs AS j WHERE j.pool = p.pool AND j.state = 'succeeded' AND j.finished_at >= b.at
                      AND j.finished_at < b.at + make_interval(secs => $2))::float8 AS latency
            FROM pools AS p CROSS JOIN b ORDER BY p.pool, b.at
            """, [.double(span), .double(bucket)])
    }

    /// The autoscaler's recommendations over the last `span` seconds: pool, made_at, stabilised, live.
    public func recommendationHistory(span: Double) throws(PostgresError) -> PostgresRows {
        try connection.query("""
            SELECT pool, made_at, stabilised, (inputs -> 'observation' ->> 'current_instances')::float8 AS live
            FROM kiroku.recommendations WHERE made_at >= now() - make_interval(secs => $1) ORDER BY made_at
            """, [.double(span)])
    }

    /// Cumulative top-1 agreement of shadow pairs per bucket over the last `span` seconds: at, rate.
    public func agreementHistory(span: Double, bucket: Double) throws(PostgresError) -> PostgresRows {
        try connection.query("""
            SELECT date_bin(make_interval(secs => $2), compared_at, 'epoch') AS at,
                   sum(count(*) FILTER (WHERE original_top1 = duplicate_top1)) OVER (ORDER BY date_bin(make_interval(secs => $2), compared_at, 'epoch'))::float8
                 / sum(count(*)) OVER (ORDER BY date_bin(make_interval(secs => $2), compared_at, 'epoch'))::float8 AS rate
            FROM kiroku.shadow_pairs WHERE compared_at >= now() - make_interval(secs => $1)
            GROUP BY 1 ORDER BY 1
            """, [.double(span), .double(bucket)])
    }
}

/// One pool's queue, waits, workers and speed over the advisor's two windows, as
/// `JobQueue.poolMeasurements` reads them: the advisor's inputs, typed.
public struct PoolMeasurement: Sendable, Equatable, Codable {
    /// The pool.
    public var pool: String
    /// Jobs due and not started, not yet due, and running.
    public var ready: Int, scheduled: Int, running: Int
    /// Seconds the oldest due job has waited (0 when none).
    public var oldestQueuedAge: Double
    /// When the next scheduled job comes due, and how many come due within the hour.
    public var nextDueAt: Date?, dueWithinHour: Int
    /// Jobs that came due in the short and the long window.
    public var shortArrivals: Int, longArrivals: Int
    /// Of those, the ones that came due when they were enqueued (not delayed or retried).
    public var shortUnscheduled: Int, longUnscheduled: Int
    /// Of those, the ones that are not shadow copies.
    public var shortPrimary: Int, longPrimary: Int
    /// Queue wait percentiles over the long window, in seconds (nil without started jobs).
    public var waitP50: Double?, waitP95: Double?
    /// Workers seen within the liveness window.
    public var liveWorkers: Int
    /// The workers' reported speed, and how many seconds ago it was measured (nil when none reported).
    public var imagesPerSecond: Double?, speedAge: Double?
    /// The instance type most of the pool's workers report.
    public var instanceType: String?
    /// Busy time of the jobs finished in the long window (claim to finish, overlaps merged), the jobs
    /// and the workers that finished them.
    public var busySeconds: Double?, busyJobs: Int, busyWorkers: Int

    init(row: PostgresRow) throws(PostgresError) {
        pool = try row.string("pool")
        (ready, scheduled, running) = (Int(try row.int("ready")), Int(try row.int("scheduled")), Int(try row.int("running")))
        oldestQueuedAge = try row.double("oldest_age")
        (nextDueAt, dueWithinHour) = (try row.optionalDate("next_due_at"), Int(try row.int("due_within_hour")))
        (shortArrivals, longArrivals) = (Int(try row.int("short_count")), Int(try row.int("long_count")))
        (shortUnscheduled, longUnscheduled) = (Int(try row.int("short_unscheduled")), Int(try row.int("long_unscheduled")))
        (shortPrimary, longPrimary) = (Int(try row.int("short_primary")), Int(try row.int("long_primary")))
        (waitP50, waitP95) = (try row.optionalDouble("p50"), try row.optionalDouble("p95"))
        liveWorkers = Int(try row.int("live"))
        (imagesPerSecond, speedAge) = (try row.optionalDouble("images_per_second"), try row.optionalDouble("speed_age"))
        instanceType = try row.optionalString("instance_type")
        busySeconds = try row.optionalDouble("busy_seconds")
        (busyJobs, busyWorkers) = (Int(try row.int("busy_jobs")), Int(try row.int("busy_workers")))
    }
}
