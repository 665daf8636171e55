import Foundation

/// The advisor against the two common rules on one trace, each baseline tuned to the same
/// objective: its parameter swept over a grid, keeping the setting with the fewest host-hours
/// among those meeting the objective in at least `requiredShare` of minutes (or, if none does,
/// the one meeting it most often). The baselines are tuned with hindsight on the trace itself;
/// the advisor is not tuned at all. When the policy has arrival forecasts, every rule gets the
/// forecast's hosts as a scheduled floor (the advisor also has them as its own rule).
public struct PolicyComparison: Sendable, Equatable, Codable {
    /// The share of minutes that must meet the objective.
    public var requiredShare: Double
    /// The advisor's outcome.
    public var advisor: SimulationOutcome
    /// The best-tuned KEDA and backlog outcomes.
    public var keda: SimulationOutcome, backlog: SimulationOutcome
    /// AWS target tracking as AWS runs it, on the acceptable backlog AWS's guide derives (not tuned).
    public var aws: SimulationOutcome
    /// Whether the advisor met the target: the required share, at no more host-hours than the
    /// best other rule that also met it.
    public var advisorMeetsTarget: Bool

    /// AWS's acceptable backlog per instance: the latency target over the time one message takes.
    public static func acceptableBacklog(_ simulation: FleetSimulation) -> Double {
        simulation.objective.target / simulation.serviceTime
    }

    /// The parameters tried for the baselines (jobs per host).
    public static let grid: [Double] = [0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50]

    /// Runs the comparison.
    public static func run(_ simulation: FleetSimulation, policy: ScalingPolicy, requiredShare: Double = 0.99) -> PolicyComparison {
        var simulation = simulation
        if !policy.forecasts.isEmpty { simulation.scheduledFloor = policy }
        let advisor = simulation.run(.advisor(policy))
        func tuned(_ make: (Double) -> ScalingRule) -> SimulationOutcome {
            let outcomes = grid.map { simulation.run(make($0)) }
            let meeting = outcomes.filter { $0.meetingShare >= requiredShare }
            return meeting.min { $0.instanceHours < $1.instanceHours }
                ?? outcomes.max { ($0.meetingShare, -$0.instanceHours) < ($1.meetingShare, -$1.instanceHours) }!
        }
        let keda = tuned { .keda(target: $0) }
        let backlog = tuned { .backlog(perInstance: $0) }
        let aws = simulation.run(.awsTargetTracking(acceptableBacklog: acceptableBacklog(simulation)))
        let rivals = [keda, backlog, aws].filter { $0.meetingShare >= requiredShare }.map(\.instanceHours)
        let meets = advisor.meetingShare >= requiredShare && advisor.instanceHours <= (rivals.min() ?? .infinity) + 1e-9
        return PolicyComparison(requiredShare: requiredShare, advisor: advisor, keda: keda, backlog: backlog, aws: aws,
                                advisorMeetsTarget: meets)
    }
}
