import Foundation

/// What the advisor knows about one pool: measured from PostgreSQL, or given for a what-if.
public struct PoolObservation: Sendable, Equatable, Codable {
    /// The pool's name.
    public var pool: String
    /// Jobs arriving per second (smoothed).
    public var arrivalRate: Double
    /// Mean seconds one host takes per image, as measured where it runs (decode and queue overhead
    /// included: the in-container figure, not a lab figure).
    public var serviceTime: Double
    /// Jobs due and waiting for a claim (scheduled jobs not yet due are in `scheduled`).
    public var queued: Int
    /// Jobs claimed and in flight.
    public var running: Int
    /// Hosts working the pool now, when known.
    public var currentInstances: Int?
    /// Caveats about the inputs (stale, missing, estimated), said in the report.
    public var notes: [String]
    /// When it was observed (arrival forecasts are matched against it).
    public var observedAt: Date
    /// Jobs enqueued to come due later, when measured: sized for a start-up lag before they do.
    public var scheduled: ScheduledArrivals?

    /// Creates an observation.
    public init(pool: String, arrivalRate: Double, serviceTime: Double, queued: Int = 0, running: Int = 0,
                currentInstances: Int? = nil, notes: [String] = [], observedAt: Date = Date(), scheduled: ScheduledArrivals? = nil) {
        self.pool = pool
        self.arrivalRate = arrivalRate
        self.serviceTime = serviceTime
        self.queued = queued
        self.running = running
        self.currentInstances = currentInstances
        self.notes = notes
        self.observedAt = observedAt
        self.scheduled = scheduled
    }

    /// Due plus in-flight jobs: the backlog the fleet must still serve (never queued alone, or a
    /// fleet scales in under running work; never jobs that cannot run yet).
    public var backlog: Int { queued + running }
}

/// The operator's bounds and objectives for a pool.
public struct ScalingPolicy: Sendable, Equatable, Codable {
    /// The queue-wait objective (Erlang C sizes for it).
    public var objective: WaitObjective
    /// Hosts may be at most this busy on average (the utilisation floor).
    public var maximumUtilisation: Double = 0.85
    /// The current backlog should clear within this many seconds while arrivals continue.
    public var drainTarget: Double = 300
    /// Seconds from asking for a host to its first job: boot, image pull, model load and warm-up.
    public var startupLag: Double = 120
    /// Never fewer hosts than this.
    public var minimumInstances: Int = 1
    /// Never more hosts than this.
    public var maximumInstances: Int = 100
    /// Arrivals expected in daily windows (bulk imports): sized for from a start-up lag ahead.
    public var forecasts: [ArrivalForecast] = []

    /// Creates a policy with defaults for everything but the objective.
    public init(objective: WaitObjective) {
        self.objective = objective
    }
}
