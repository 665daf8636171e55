import Foundation
import KirokuQueue

/// What PostgreSQL says about each pool, turned into advisor inputs: queue depth (due jobs; those
/// scheduled for later apart, per minute of the next two hours), arrivals (counted when a job
/// comes due) over a short and a long window, per-host speed as the workers measured it (the in-container
/// figure; else the busy time their jobs record, for services that report nothing), live hosts (any
/// worker id seen on a job, registered or not), and queue-wait percentiles. Stale or missing data is said in the notes.
public struct QueueMeasurements: Sendable {
    /// One pool's measurements.
    public struct Pool: Sendable, Equatable, Codable {
        /// The inputs for sizing, or nil when the service time is unknown (said in `notes`).
        public var observation: PoolObservation?
        /// Arrivals per second over the short and the long window.
        public var arrivalRateShort: Double, arrivalRateLong: Double
        /// Arrivals per second that are not shadow copies (the larger window's figure): the pool's share of the traffic.
        public var primaryArrivalRate: Double
        /// Where the service time came from: "reported by its workers", "busy time of its jobs", or nil (unknown).
        public var serviceTimeSource: String?
        /// Distinct workers seen working the pool in the last minutes (registered or not).
        public var liveWorkers: Int
        /// The instance type the workers reported (the most common), if any.
        public var instanceType: String?
        /// Queue-wait p50 and p95 over the long window, seconds.
        public var waitP50: Double?, waitP95: Double?
        /// The age of the oldest queued job, seconds.
        public var oldestQueuedAge: Double
        /// Caveats.
        public var notes: [String]
        /// The pool's name.
        public var pool: String
    }

    /// The short and the long arrival windows, seconds.
    public var shortWindow: Double = 60, longWindow: Double = 900
    /// A worker not seen for this long is not counted as running.
    public var liveness: Double = 90
    /// How far ahead scheduled jobs are counted, seconds (the start-up lag and the next hour fit).
    public var scheduledHorizon: Double = 7200

    /// Creates measurements with the default windows.
    public init() {}

    /// Measures every pool that has jobs or workers (or only `pools` when given).
    public func measure(_ connection: PostgresConnection, pools wanted: [String]? = nil) throws(PostgresError) -> [Pool] {
        let rows = try connection.query("""
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
            """, [.double(shortWindow), .double(longWindow), .double(liveness)])
        var upcoming: [String: [Int]] = [:]
        for row in try connection.query("""
            SELECT pool, greatest(floor(extract(epoch FROM run_after - now()) / 60), 0)::int AS minute, count(*) AS jobs
            FROM kiroku.jobs WHERE state = 'scheduled' AND run_after < now() + make_interval(secs => $1)
            GROUP BY 1, 2
            """, [.double(scheduledHorizon)]) {
            let minute = Int(try row.int("minute"))
            upcoming[try row.string("pool"), default: Array(repeating: 0, count: Int(scheduledHorizon / 60))][minute] = Int(try row.int("jobs"))
        }
        var pools: [Pool] = []
        for row in rows {
            let name = try row.string("pool")
            if let wanted, !wanted.contains(name) { continue }
            pools.append(try pool(row, name: name, upcoming: upcoming[name]))
        }
        return pools
    }

    private func pool(_ row: PostgresRow, name: String, upcoming: [Int]?) throws(PostgresError) -> Pool {
        let short = Double(try row.int("short_count")) / shortWindow
        let long = Double(try row.int("long_count")) / longWindow
        var notes: [String] = []
        // Scale out at once: size for the busier of the two windows.
        let arrivalRate = max(short, long)
        if try row.int("long_count") == 0 {
            notes.append(String(format: "no arrivals in the last %.0f minutes", longWindow / 60))
        }
        var serviceTime: Double?, source: String?
        if let rate = try row.optionalDouble("images_per_second") {
            (serviceTime, source) = (1 / rate, "reported by its workers")
            if let age = try row.optionalDouble("speed_age"), age > 300 {
                notes.append(String(format: "the workers' speed was last measured %.0f minutes ago", age / 60))
            }
        } else if let seconds = try row.optionalDouble("busy_seconds"), seconds > 0 {
            let (jobs, workers) = (try row.int("busy_jobs"), try row.int("busy_workers"))
            (serviceTime, source) = (seconds / Double(jobs), "busy time of its jobs")
            notes.append(String(format: "no worker reported its speed: the service time is measured from the jobs themselves, %.3g s of busy time (claim to finish, overlaps merged) over %d jobs finished by %d %@ in %.0f minutes",
                                seconds, jobs, workers, workers == 1 ? "worker" : "workers", longWindow / 60))
        } else {
            notes.append("no service time measured (no worker speed, no finished jobs): run workers, or use what-if mode (--arrival-rate, --service-time)")
        }
        let live = Int(try row.int("live"))
        if live == 0 { notes.append("no live workers in this pool") }
        let (ready, running) = (Int(try row.int("ready")), Int(try row.int("running")))
        let unscheduledRate = max(Double(try row.int("short_unscheduled")) / shortWindow, Double(try row.int("long_unscheduled")) / longWindow)
        let scheduled = upcoming.map { ScheduledArrivals(perMinute: $0, unscheduledArrivalRate: unscheduledRate) }
        if let scheduled {
            notes.append(String(format: "%d jobs scheduled to come due within %.0f minutes (%@): sized for a start-up lag before they do",
                                scheduled.total, scheduledHorizon / 60, scheduled.windows.joined(separator: "; ")))
        }
        let (p50, p95, oldest) = (try row.optionalDouble("p50"), try row.optionalDouble("p95"), try row.double("oldest_age"))
        notes.insert(String(format: "measured: arrivals %.3g/s over %.0f s and %.3g/s over %.0f min (sized for the larger); queue wait p50 %@, p95 %@; oldest queued %.1f s",
                            short, shortWindow, long, longWindow / 60, p50.map { String(format: "%.0f ms", $0 * 1000) } ?? "-",
                            p95.map { String(format: "%.0f ms", $0 * 1000) } ?? "-", oldest), at: 0)
        let observation = serviceTime.map {
            PoolObservation(pool: name, arrivalRate: arrivalRate, serviceTime: $0, queued: ready, running: running,
                            currentInstances: live, notes: notes, scheduled: scheduled)
        }
        let primary = max(Double(try row.int("short_primary")) / shortWindow, Double(try row.int("long_primary")) / longWindow)
        return Pool(observation: observation, arrivalRateShort: short, arrivalRateLong: long, primaryArrivalRate: primary,
                    serviceTimeSource: source, liveWorkers: live,
                    instanceType: try row.optionalString("instance_type"), waitP50: p50, waitP95: p95, oldestQueuedAge: oldest,
                    notes: notes, pool: name)
    }
}
