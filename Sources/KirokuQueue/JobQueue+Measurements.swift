import Foundation

/// What the advisor reads: every pool's arrivals, depth, waits, workers and speed, the jobs
/// scheduled ahead, and the history its HTML report charts. The advisor turns these rows into its
/// inputs; the SQL lives here.
extension JobQueue {
    /// One measurement per pool with jobs or workers, in pool order (windows and liveness in seconds).
    public func poolMeasurements(shortWindow: Double, longWindow: Double, liveness: Double) throws(PostgresError) -> [PoolMeasurement] {
        try connection.query("""
            WITH pools AS (
                SELECT DISTINCT pool FROM kiroku.jobs WHERE state IN ('scheduled', 'queued', 'running') OR enqueued_at >= now() - make_interval(secs => $2)
                UNION SELECT pool FROM kiroku.workers WHERE stopped_at IS NULL OR last_seen >= now() - make_interval(secs => $2)
            ),
            depth AS (SELECT * FROM kiroku.queue_depth),
            -- A job arrives when it comes due (due_at; enqueued_at for jobs from before 0011).
            arrivals AS (
                SELECT pool,
                       count(*) FILTER (WHERE coalesce(due_at, enqueued_at) >= now() - make_interval(secs => $1)) AS short_count,
                       count(*) AS long_count,
                       count(*) FILTER (WHERE coalesce(due_at, enqueued_at) >= now() - make_interval(secs => $1)
                                          AND coalesce(due_at, enqueued_at) <= enqueued_at) AS short_unscheduled,
                       count(*) FILTER (WHERE coalesce(due_at, enqueued_at) <= enqueued_at) AS long_unscheduled,
                       count(*) FILTER (WHERE coalesce(due_at, enqueued_at) >= now() - make_interval(secs => $1)
                                          AND shadow_of IS NULL) AS short_primary,
                       count(*) FILTER (WHERE shadow_of IS NULL) AS long_primary
                FROM kiroku.jobs
                WHERE (due_at >= now() - make_interval(secs => $2) OR (due_at IS NULL AND enqueued_at >= now() - make_interval(secs => $2)))
                  AND coalesce(due_at, enqueued_at) <= now()
                GROUP BY pool
            ),
            waits AS (
                SELECT pool,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - greatest(enqueued_at, run_after)))::float8 AS p50,
                       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - greatest(enqueued_at, run_after)))::float8 AS p95
                FROM kiroku.jobs WHERE started_at >= now() - make_interval(secs => $2) GROUP BY pool
            ),
            -- Workers seen in the last minutes: registered ones, and any worker id (a legacy service's
            -- too, registered or not) with a claim, a finish or a held lease, unless it said it stopped.
            seen AS (
                SELECT pool, id AS worker FROM kiroku.workers WHERE stopped_at IS NULL AND last_seen >= now() - make_interval(secs => $3)
                UNION
                SELECT pool, worker_id FROM kiroku.jobs AS j
                WHERE worker_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM kiroku.workers AS w WHERE w.id = j.worker_id AND w.stopped_at IS NOT NULL)
                  AND (started_at >= now() - make_interval(secs => $3) OR finished_at >= now() - make_interval(secs => $3)
                       OR (state = 'running' AND lease_expires_at > now()))
            ),
            live AS (SELECT pool, count(*) AS live FROM seen GROUP BY pool),
            speeds AS (
                SELECT pool,
                       avg(images_per_second) FILTER (WHERE images_per_second IS NOT NULL AND speed_measured_at >= now() - make_interval(secs => $2)) AS images_per_second,
                       max(extract(epoch FROM now() - speed_measured_at)) FILTER (WHERE speed_measured_at >= now() - make_interval(secs => $2))::float8 AS speed_age,
                       mode() WITHIN GROUP (ORDER BY instance_type) AS instance_type
                FROM kiroku.workers
                WHERE speed_measured_at >= now() - make_interval(secs => $2) OR last_seen >= now() - make_interval(secs => $2)
                GROUP BY pool
            ),
            -- Busy time from the jobs themselves, for pools whose workers report no speed: each
            -- worker's claim-to-finish intervals merged where they overlap (a batch claimed together
            -- counts once), summed, and divided by the jobs finished in them.
            finished AS (
                SELECT pool, worker_id, started_at, finished_at,
                       CASE WHEN started_at <= max(finished_at) OVER (PARTITION BY worker_id ORDER BY started_at, id
                                                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                            THEN 0 ELSE 1 END AS opens
                FROM kiroku.jobs
                WHERE state IN ('succeeded', 'failed') AND finished_at >= now() - make_interval(secs => $2)
                  AND started_at IS NOT NULL AND worker_id IS NOT NULL
            ),
            islands AS (
                SELECT pool, worker_id, sum(opens) OVER (PARTITION BY worker_id ORDER BY started_at ROWS UNBOUNDED PRECEDING) AS island,
                       started_at, finished_at
                FROM finished
            ),
            busy AS (
                SELECT pool, sum(seconds)::float8 AS seconds, sum(jobs)::int8 AS jobs, count(DISTINCT worker_id) AS workers
                FROM (SELECT pool, worker_id, extract(epoch FROM max(finished_at) - min(started_at))::float8 AS seconds, count(*) AS jobs
                      FROM islands GROUP BY pool, worker_id, island) AS per_island
                GROUP BY pool
            )
            SELECT p.pool,
                   coalesce(d.ready, 0) AS ready, coalesce(d.running, 0) AS running,
                   coalesce(extract(epoch FROM d.oldest_queued_age), 0)::float8 AS oldest_age,
                   coalesce(a.short_count, 0) AS short_count, coalesce(a.long_count, 0) AS long_count,
                   coalesce(a.short_unscheduled, 0) AS short_unscheduled, coalesce(a.long_unscheduled, 0) AS long_unscheduled,
                   coalesce(a.short_primary, 0) AS short_primary, coalesce(a.long_primary, 0) AS long_primary,
                   w.p50, w.p95, coalesce(l.live, 0) AS live, s.images_per_second::float8 AS images_per_second,
                   s.speed_age, s.instance_type, b.seconds::float8 AS busy_seconds, coalesce(b.jobs, 0) AS busy_jobs,
                   coalesce(b.workers, 0) AS busy_workers
            FROM pools AS p
            LEFT JOIN depth AS d USING (pool) LEFT JOIN arrivals AS a USING (pool) LEFT JOIN waits AS w USING (pool)
            LEFT JOIN live AS l USING (pool) LEFT JOIN speeds AS s USING (pool) LEFT JOIN busy AS b USING (pool)
            ORDER BY p.pool
            """, [.double(shortWindow), .double(longWindow), .double(liveness)]).map(PoolMeasurement.init(row:))
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
public struct PoolMeasurement: Sendable, Equatable {
    /// The pool.
    public var pool: String
    /// Jobs due and not started, and running.
    public var ready: Int, running: Int
    /// Seconds the oldest due job has waited (0 when none).
    public var oldestQueuedAge: Double
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
        (ready, running) = (Int(try row.int("ready")), Int(try row.int("running")))
        oldestQueuedAge = try row.double("oldest_age")
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
