import Foundation

/// One instance type's answer for a pool: how many, what it costs, whether the service time
/// behind it was measured on that type or scaled from another by vCPU count (an estimate).
public struct SizeOption: Sendable, Equatable, Codable {
    /// The instance type.
    public var instanceType: String
    /// Its vCPUs.
    public var vcpu: Int
    /// Seconds per image per host on this type.
    public var serviceTime: Double
    /// True when `serviceTime` was scaled from another type's measurement.
    public var estimated: Bool
    /// Hosts recommended.
    public var instances: Int
    /// False when the policy's maximum stops the objective from being met.
    public var meetsObjective: Bool
    /// Dollars per hour for the pool, and per million images at the resulting utilisation.
    public var poolPerHour: Double, perMillionAtUtilisation: Double
}

/// The advice for one pool, with its working.
public struct PoolAdvice: Sendable, Equatable, Codable {
    /// The inputs.
    public var observation: PoolObservation
    /// The type sized for.
    public var instanceType: String
    /// True when the service time was scaled from another type (an estimate).
    public var serviceTimeEstimated: Bool
    /// The rules' answers and the result.
    public var sizing: Sizing
    /// The cost at the recommendation.
    public var cost: CostEstimate
    /// The cost of the hosts running now, at their measured utilisation (nil when none run).
    public var currentCost: CostEstimate?
    /// Every CPU type of the same family, sized for the same objective.
    public var alternatives: [SizeOption]
    /// The cheapest of them that meets the objective.
    public var cheapest: SizeOption?
}

/// The whole report: what `kiroku advise` prints, as text, JSON or HTML.
public struct Advice: Sendable, Equatable, Codable {
    /// "what-if" (inputs given) or "measured" (read from PostgreSQL).
    public var mode: String
    /// When it was made.
    public var generatedAt: Date
    /// The objective sized for.
    public var objective: WaitObjective
    /// The catalog's date and source note.
    public var catalogDate: String, catalogSource: String
    /// The pools.
    public var pools: [PoolAdvice]
    /// The primary pool's recommended host count (the first pool).
    public var recommendedInstances: Int
    /// What could not be sized, and why.
    public var notes: [String]

    /// Assembles a report; the primary pool is the first.
    public init(mode: String, objective: WaitObjective, catalog: InstanceCatalog, pools: [PoolAdvice], notes: [String] = [],
                generatedAt: Date = Date()) {
        self.notes = notes
        self.mode = mode
        self.generatedAt = generatedAt
        self.objective = objective
        catalogDate = catalog.date
        catalogSource = catalog.source
        self.pools = pools
        recommendedInstances = pools.first?.sizing.recommended ?? 0
    }
}

/// Turns observations into advice: sizing by the rules, cost from the catalog, and the other
/// sizes of the same family.
public struct Advisor: Sendable {
    /// The prices and types.
    public let catalog: InstanceCatalog
    /// The bounds and objective.
    public let policy: ScalingPolicy
    /// The region priced.
    public let region: String
    /// The share of hosts run on spot.
    public let spotFraction: Double

    /// Creates an advisor.
    public init(catalog: InstanceCatalog, policy: ScalingPolicy, region: String? = nil, spotFraction: Double = 0) {
        self.catalog = catalog
        self.policy = policy
        self.region = region ?? catalog.defaultRegion
        self.spotFraction = spotFraction
    }

    /// Advice for one pool whose service time was measured on `measuredOn` (a catalog type),
    /// sized for `instanceType` (the same type unless given).
    public func advise(_ observation: PoolObservation, measuredOn: String, instanceType: String? = nil) throws(AdvisorError) -> PoolAdvice {
        let reference = try catalog.instance(measuredOn)
        let target = try catalog.instance(instanceType ?? measuredOn)
        let chosen = try option(observation, on: target, reference: reference)
        let sizing = CapacityPlanner.size(scaled(observation, to: target, from: reference), policy: policy)
        let cost = CostEstimate(region: region, price: try catalog.price(of: target, in: region), spotFraction: spotFraction,
                                instances: sizing.recommended, serviceTime: chosen.serviceTime, utilisation: sizing.utilisation)
        var alternatives: [SizeOption] = []
        for candidate in catalog.instances where candidate.family == target.family && candidate.accelerator == nil && candidate.prices[region] != nil {
            alternatives.append(try option(observation, on: candidate, reference: reference))
        }
        let cheapest = alternatives.filter(\.meetsObjective).min { $0.poolPerHour < $1.poolPerHour }
        let current = observation.currentInstances.flatMap { $0 > 0 && target.type == reference.type ? $0 : nil }
        let currentCost = try current.map { hosts throws(AdvisorError) in
            CostEstimate(region: region, price: try catalog.price(of: target, in: region), spotFraction: spotFraction, instances: hosts,
                         serviceTime: chosen.serviceTime,
                         utilisation: min(1, observation.arrivalRate * chosen.serviceTime / Double(hosts)))
        }
        return PoolAdvice(observation: observation, instanceType: target.type, serviceTimeEstimated: chosen.estimated, sizing: sizing,
                          cost: cost, currentCost: currentCost, alternatives: alternatives, cheapest: cheapest)
    }

    /// Advice for every measured pool: each sized for `instanceType` (default: the type its workers
    /// reported, else `fallbackType`), its speed taken as measured on the reported type (or
    /// `measuredOn`); a pool whose workers report an accelerator type keeps it. Pools without a
    /// service time are named in the notes, not sized.
    public func advise(measured pools: [QueueMeasurements.Pool], instanceType: String?, measuredOn: String?,
                       fallbackType: String = "c5.xlarge") throws(AdvisorError) -> Advice {
        var advised: [PoolAdvice] = []
        var notes: [String] = []
        if pools.isEmpty { notes.append("no pool has jobs or workers: nothing to size") }
        for measurement in pools {
            guard var observation = measurement.observation else {
                notes.append("pool \(measurement.pool): " + measurement.notes.joined(separator: "; "))
                continue
            }
            var reported = measurement.instanceType
            if let type = reported, (try? catalog.instance(type)) == nil {
                observation.notes.append("the workers report instance type '\(type)', which the catalog does not list: assuming \(instanceType ?? fallbackType) (pass --measured-on)")
                reported = nil
            }
            // A pool on accelerator hosts (a legacy GPU fleet) is sized on its own type: --instance-type names the CPU type.
            if let type = reported, (try? catalog.instance(type))?.accelerator != nil {
                advised.append(try advise(observation, measuredOn: type, instanceType: type))
                continue
            }
            let type = instanceType ?? reported ?? fallbackType
            if measurement.instanceType == nil && measuredOn == nil {
                observation.notes.append("the workers reported no instance type: their speed is taken as \(type)'s (pass --measured-on, or run workers with --instance-type)")
            }
            advised.append(try advise(observation, measuredOn: measuredOn ?? reported ?? type, instanceType: type))
        }
        return Advice(mode: "measured", objective: policy.objective, catalog: catalog, pools: advised, notes: notes)
    }

    /// One host of `type` per hour in the advisor's region, at its spot blend.
    public func hostPrice(of type: String) throws(AdvisorError) -> Double {
        let price = try catalog.price(of: try catalog.instance(type), in: region)
        return CostEstimate(region: region, price: price, spotFraction: spotFraction, instances: 1, serviceTime: 1, utilisation: 1).blendedPerHour
    }

    /// The observation with its service time scaled from `reference` to `type` by vCPU count.
    private func scaled(_ observation: PoolObservation, to type: InstanceCatalog.InstanceType,
                        from reference: InstanceCatalog.InstanceType) -> PoolObservation {
        var scaled = observation
        scaled.serviceTime = observation.serviceTime * Double(reference.vcpu) / Double(type.vcpu)
        if type.type != reference.type { scaled.currentInstances = nil }
        return scaled
    }

    private func option(_ observation: PoolObservation, on type: InstanceCatalog.InstanceType,
                        reference: InstanceCatalog.InstanceType) throws(AdvisorError) -> SizeOption {
        let scaledObservation = scaled(observation, to: type, from: reference)
        let sizing = CapacityPlanner.size(scaledObservation, policy: policy)
        let cost = CostEstimate(region: region, price: try catalog.price(of: type, in: region), spotFraction: spotFraction,
                                instances: sizing.recommended, serviceTime: scaledObservation.serviceTime, utilisation: sizing.utilisation)
        return SizeOption(instanceType: type.type, vcpu: type.vcpu, serviceTime: scaledObservation.serviceTime,
                          estimated: type.type != reference.type, instances: sizing.recommended, meetsObjective: !sizing.limitedByMaximum,
                          poolPerHour: cost.poolPerHour, perMillionAtUtilisation: cost.perMillionAtUtilisation)
    }
}
