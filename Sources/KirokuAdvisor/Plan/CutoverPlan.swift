import Foundation

/// Where the move from `from` to `to` stands: the new pool's routing share now, the next step's,
/// whether the shadow comparison allows it, and the command for it (the plan's and the dashboard's).
public struct CutoverStep: Sendable, Equatable, Codable {
    /// The legacy pool and the new one.
    public var from: String, to: String
    /// The new pool's routing share now, percent (no routes: every job goes to the default pool, cpu).
    public var currentPercent: Double
    /// The next step's share, percent (nil when the move is complete).
    public var nextPercent: Int?
    /// True when the shadow comparison allows taking the next step.
    public var nextAllowed: Bool
    /// The `kiroku route set` command for the next step.
    public var nextCommand: String?

    /// Places the move among `percents` from today's routing weights and the shadow verdict.
    public init(from: String, to: String, percents: [Int], routes: [(pool: String, weight: Int)], shadow: ShadowComparison?) {
        (self.from, self.to) = (from, to)
        let weights = Dictionary(routes.map { ($0.pool, $0.weight) }, uniquingKeysWith: +)
        let routed = routes.reduce(0) { $0 + $1.weight }
        currentPercent = routes.isEmpty ? (to == "cpu" ? 100 : 0) : 100 * Double(weights[to] ?? 0) / Double(max(routed, 1))
        let next = percents.filter { [currentPercent] in Double($0) > currentPercent + 1e-9 }.min()
        nextPercent = next
        nextAllowed = next != nil && (shadow?.recommendation.hasPrefix("cut over") ?? false)
        nextCommand = next.map { "kiroku route set \(to)=\($0) \(from)=\(100 - $0)" }
    }
}

/// The move of all traffic from a legacy pool to a new one, step by step (`kiroku advise --plan`):
/// at each routing share, the hosts each pool needs for the wait objective (the what-if sizing of
/// its share of the measured arrivals at its measured speed), their cost, the end state against
/// today's fleet, whether the shadow comparison allows the next step, and the command for it.
public struct CutoverPlan: Sendable, Equatable, Codable {
    /// One pool at one step.
    public struct PoolStep: Sendable, Equatable, Codable {
        /// The pool.
        public var pool: String
        /// The share of the traffic it serves, 0 to 1.
        public var share: Double
        /// Its arrivals, jobs per second.
        public var arrivalRate: Double
        /// Hosts recommended (0 when it serves nothing: retired or not yet started).
        public var instances: Int
        /// The sizing with every rule's working (nil when the pool serves nothing).
        public var sizing: Sizing?
        /// Dollars per hour for the pool.
        public var perHour: Double
    }

    /// One routing step.
    public struct Step: Sendable, Equatable, Codable {
        /// The new pool's share of the traffic, percent.
        public var percent: Int
        /// The legacy pool, then the new one.
        public var pools: [PoolStep]
        /// Dollars per hour for both pools, and per million images at the measured arrivals.
        public var perHour: Double, perMillionImages: Double
        /// False when a pool's maximum stops the objective from being met.
        public var meetsObjective: Bool
    }

    /// What the plan knows of one pool's hosts.
    public struct PoolSpeed: Sendable, Equatable, Codable {
        /// The pool.
        public var pool: String
        /// The instance type it runs on (nil: unknown).
        public var instanceType: String?
        /// Seconds per image per host (nil: unknown).
        public var serviceTime: Double?
        /// How the speed was measured, in words.
        public var source: String
        /// Hosts seen working the pool now.
        public var liveHosts: Int
    }

    /// The routing shares the move steps through unless told, percent.
    public static let defaultPercents = [10, 25, 50, 100]

    /// The legacy pool and the new one.
    public var from: String, to: String
    /// The two pools' hosts and speeds.
    public var speeds: [PoolSpeed]
    /// All pools' arrivals that are not shadow copies, jobs per second: the traffic to move.
    public var totalArrivalRate: Double
    /// The new pool's routing share now, percent.
    public var currentPercent: Double
    /// The steps, starting from 0% (every job on the legacy pool); empty while a speed is unknown.
    public var steps: [Step]
    /// Dollars per hour of the hosts running now (nil when none are seen).
    public var todayPerHour: Double?
    /// The end state's cost over the 0% step's (the seed's "a sixth"), and over today's running fleet.
    public var endOverStart: Double?, endOverToday: Double?
    /// The shadow comparison's verdict (nil when the plan was made without a database).
    public var shadow: ShadowComparison?
    /// The next step's share, percent (nil when the move is complete).
    public var nextPercent: Int?
    /// True when the shadow comparison allows taking the next step.
    public var nextStepAllowed: Bool
    /// The `kiroku route set` command for the next step.
    public var nextCommand: String?
    /// What to run before the plan can be made (unknown speeds or types).
    public var toMeasure: [String]
    /// Caveats.
    public var notes: [String]

    /// Plans the move from `from` to `to` over `percents` of the traffic, from the measured pools,
    /// today's routing weights and the shadow comparison; `toType` and `measuredOn` override the new
    /// pool's instance type and where its speed was measured, `fromType` the legacy pool's type.
    public static func make(advisor: Advisor, measured: [QueueMeasurements.Pool], from: String, to: String, percents: [Int],
                            routes: [(pool: String, weight: Int)], shadow: ShadowComparison?, toType: String? = nil,
                            measuredOn: String? = nil, fromType: String? = nil, fallbackType: String) throws(AdvisorError) -> CutoverPlan {
        var notes: [String] = [], toMeasure: [String] = []
        let total = measured.reduce(0) { $0 + $1.primaryArrivalRate }
        let others = measured.filter { $0.pool != from && $0.pool != to && $0.primaryArrivalRate > 0 }.map(\.pool)
        if !others.isEmpty {
            notes.append("the arrivals of \(others.joined(separator: ", ")) are counted in the traffic to move")
        }
        if total == 0 {
            toMeasure.append(String(format: "no arrivals in the last %.0f minutes: run the plan while traffic flows, or size a rate with kiroku advise --arrival-rate",
                                    QueueMeasurements().longWindow / 60))
        }
        let legacy = try speed(of: from, in: measured, type: fromType, measuredOn: nil, catalog: advisor.catalog, toMeasure: &toMeasure, role: .legacy)
        let new = try speed(of: to, in: measured, type: toType ?? fallbackType, measuredOn: measuredOn, catalog: advisor.catalog,
                            toMeasure: &toMeasure, role: .new(explicit: toType != nil))

        let position = CutoverStep(from: from, to: to, percents: percents, routes: routes, shadow: shadow)
        let currentPercent = position.currentPercent
        if routes.contains(where: { $0.pool != from && $0.pool != to && $0.weight > 0 }) {
            notes.append("routing also sends jobs to pools other than \(from) and \(to): the command below routes only between the two")
        }
        var steps: [Step] = []
        if toMeasure.isEmpty, let legacyTime = legacy.measured.serviceTime, let newTime = new.measured.serviceTime {
            for percent in [0] + percents.filter({ $0 > 0 }) {
                let share = Double(percent) / 100
                let pools = [
                    try step(advisor, pool: from, share: 1 - share, total: total, serviceTime: legacyTime, type: legacy.type, measuredOn: legacy.measuredOn),
                    try step(advisor, pool: to, share: share, total: total, serviceTime: newTime, type: new.type, measuredOn: new.measuredOn),
                ]
                let perHour = pools.reduce(0) { $0 + $1.perHour }
                steps.append(Step(percent: percent, pools: pools, perHour: perHour, perMillionImages: total > 0 ? perHour / (total * 3600) * 1e6 : 0,
                                  meetsObjective: pools.allSatisfy { !($0.sizing?.limitedByMaximum ?? false) }))
            }
        }
        var todayPerHour: Double?
        if let legacyType = legacy.type, let newType = new.type, legacy.measured.liveHosts + new.measured.liveHosts > 0 {
            todayPerHour = Double(legacy.measured.liveHosts) * (try advisor.hostPrice(of: legacyType))
                + Double(new.measured.liveHosts) * (try advisor.hostPrice(of: newType))
        }
        let end = steps.count > 1 ? steps.last : nil
        if shadow != nil && shadow?.fraction == nil && shadow?.top1.trials == 0 {
            notes.append("no shadow comparison yet: duplicate a share of jobs to both pools first, e.g. kiroku shadow set 0.05 --pools \(to),\(from)")
        }
        return CutoverPlan(from: from, to: to, speeds: [legacy.measured, new.measured], totalArrivalRate: total, currentPercent: currentPercent,
                           steps: steps, todayPerHour: todayPerHour,
                           endOverStart: end.flatMap { end in steps[0].perHour > 0 ? end.perHour / steps[0].perHour : nil },
                           endOverToday: end.flatMap { end in todayPerHour.flatMap { $0 > 0 ? end.perHour / $0 : nil } },
                           shadow: shadow, nextPercent: position.nextPercent, nextStepAllowed: position.nextAllowed,
                           nextCommand: position.nextCommand, toMeasure: toMeasure, notes: notes)
    }

    private enum Role {
        case legacy
        case new(explicit: Bool)
    }

    /// A pool's type and speed, or what to run to learn them.
    private static func speed(of pool: String, in measured: [QueueMeasurements.Pool], type override: String?, measuredOn: String?,
                              catalog: InstanceCatalog, toMeasure: inout [String], role: Role)
        throws(AdvisorError) -> (measured: PoolSpeed, type: String?, measuredOn: String?) {
        let measurement = measured.first { $0.pool == pool }
        let serviceTime = measurement?.observation?.serviceTime
        let reported = measurement?.instanceType.flatMap { (try? catalog.instance($0)) != nil ? $0 : nil }
        var type: String?
        switch role {
        case .legacy:
            type = override ?? reported
            if type == nil {
                toMeasure.append("pool \(pool)'s instance type is unknown: have its workers call kiroku.register_worker, then SELECT kiroku.report_worker_speed('WORKER ID', 'g4dn.xlarge', NULL) with their type, or pass --from-type")
            }
        case .new(let explicit):
            type = explicit ? override : reported ?? override
        }
        if let type { _ = try catalog.instance(type) }
        if serviceTime == nil {
            switch role {
            case .legacy:
                toMeasure.append("pool \(pool) has no measured speed: let its workers finish jobs through kiroku.claim and kiroku.complete (the busy time of their jobs is measured), or have them call kiroku.report_worker_speed")
            case .new:
                toMeasure.append("pool \(pool) has no measured speed: run one worker on the type you will use, e.g. kiroku worker --pool \(pool) --instance-type \(type ?? "c5.xlarge"), and plan again once it has finished jobs")
            }
        }
        let source = measurement == nil ? "unknown: no jobs or workers" : measurement?.serviceTimeSource ?? "unknown"
        let liveHosts = measurement?.liveWorkers ?? 0
        return (PoolSpeed(pool: pool, instanceType: type, serviceTime: serviceTime, source: source, liveHosts: liveHosts), type,
                measuredOn ?? reported ?? type)
    }

    /// One pool sized for its share: exactly the what-if sizing of that rate and speed.
    private static func step(_ advisor: Advisor, pool: String, share: Double, total: Double, serviceTime: Double, type: String?,
                             measuredOn: String?) throws(AdvisorError) -> PoolStep {
        guard share > 0, let type else {
            return PoolStep(pool: pool, share: share, arrivalRate: 0, instances: 0, sizing: nil, perHour: 0)
        }
        let observation = PoolObservation(pool: pool, arrivalRate: total * share, serviceTime: serviceTime)
        let advice = try advisor.advise(observation, measuredOn: measuredOn ?? type, instanceType: type)
        return PoolStep(pool: pool, share: share, arrivalRate: total * share, instances: advice.sizing.recommended, sizing: advice.sizing,
                        perHour: advice.cost.poolPerHour)
    }
}
