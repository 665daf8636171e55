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
        let queue = JobQueue(connection: connection)
        let measurements = try queue.poolMeasurements(shortWindow: shortWindow, longWindow: longWindow, liveness: liveness)
        var upcoming: [String: [Int]] = [:]
        for (pool, minute, jobs) in try queue.scheduledPerMinute(horizon: scheduledHorizon) {
            upcoming[pool, default: Array(repeating: 0, count: Int(scheduledHorizon / 60))][minute] = jobs
        }
        var pools: [Pool] = []
        for measured in measurements {
            if let wanted, !wanted.contains(measured.pool) { continue }
            pools.append(pool(measured, upcoming: upcoming[measured.pool]))
        }
        return pools
    }

    private func pool(_ measured: PoolMeasurement, upcoming: [Int]?) -> Pool {
        let name = measured.pool
        let short = Double(measured.shortArrivals) / shortWindow
        let long = Double(measured.longArrivals) / longWindow
        var notes: [String] = []
        // Scale out at once: size for the busier of the two windows.
        let arrivalRate = max(short, long)
        if measured.longArrivals == 0 {
            notes.append(String(format: "no arrivals in the last %.0f minutes", longWindow / 60))
        }
        var serviceTime: Double?, source: String?
        if let rate = measured.imagesPerSecond {
            (serviceTime, source) = (1 / rate, "reported by its workers")
            if let age = measured.speedAge, age > 300 {
                notes.append(String(format: "the workers' speed was last measured %.0f minutes ago", age / 60))
            }
        } else if let seconds = measured.busySeconds, seconds > 0 {
            let (jobs, workers) = (measured.busyJobs, measured.busyWorkers)
            (serviceTime, source) = (seconds / Double(jobs), "busy time of its jobs")
            notes.append(String(format: "no worker reported its speed: the service time is measured from the jobs themselves, %.3g s of busy time (claim to finish, overlaps merged) over %d jobs finished by %d %@ in %.0f minutes",
                                seconds, jobs, workers, workers == 1 ? "worker" : "workers", longWindow / 60))
        } else {
            notes.append("no service time measured (no worker speed, no finished jobs): run workers, or use what-if mode (--arrival-rate, --service-time)")
        }
        let live = measured.liveWorkers
        if live == 0 { notes.append("no live workers in this pool") }
        let (ready, running) = (measured.ready, measured.running)
        let unscheduledRate = max(Double(measured.shortUnscheduled) / shortWindow, Double(measured.longUnscheduled) / longWindow)
        let scheduled = upcoming.map { ScheduledArrivals(perMinute: $0, unscheduledArrivalRate: unscheduledRate) }
        if let scheduled {
            notes.append(String(format: "%d jobs scheduled to come due within %.0f minutes (%@): sized for a start-up lag before they do",
                                scheduled.total, scheduledHorizon / 60, scheduled.windows.joined(separator: "; ")))
        }
        let (p50, p95, oldest) = (measured.waitP50, measured.waitP95, measured.oldestQueuedAge)
        notes.insert(String(format: "measured: arrivals %.3g/s over %.0f s and %.3g/s over %.0f min (sized for the larger); queue wait p50 %@, p95 %@; oldest queued %.1f s",
                            short, shortWindow, long, longWindow / 60, p50.map { String(format: "%.0f ms", $0 * 1000) } ?? "-",
                            p95.map { String(format: "%.0f ms", $0 * 1000) } ?? "-", oldest), at: 0)
        let observation = serviceTime.map {
            PoolObservation(pool: name, arrivalRate: arrivalRate, serviceTime: $0, queued: ready, running: running,
                            currentInstances: live, notes: notes, scheduled: scheduled)
        }
        let primary = max(Double(measured.shortPrimary) / shortWindow, Double(measured.longPrimary) / longWindow)
        return Pool(observation: observation, arrivalRateShort: short, arrivalRateLong: long, primaryArrivalRate: primary,
                    serviceTimeSource: source, liveWorkers: live,
                    instanceType: measured.instanceType, waitP50: p50, waitP95: p95, oldestQueuedAge: oldest,
                    notes: notes, pool: name)
    }
}
