import ArgumentParser
import Foundation
import KirokuAdvisor

/// `kiroku simulate`: the scaling rules on an arrival trace, without a fleet.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate a fleet on an arrival trace under the advisor, KEDA's rule, the backlog rule and AWS target tracking.",
        discussion: """
            The trace is a CSV of minute,arrivals_per_second (Benchmarks/traces has a diurnal day and \
            a burst). Arrivals are Poisson at each minute's rate, service times exponential with \
            --service-time, new hosts help after --startup-lag, and every rule goes through the \
            same stabilisation as the autoscaler, except AWS target tracking, which keeps its own \
            alarms (3 minutes above the target to scale out, 15 below 90% of it to scale in) on a \
            target derived from the objective. With --policy all, KEDA's and the backlog rule's \
            parameters are tuned on the trace to the same objective and the four are compared.
            """)

    enum PolicyChoice: String, ExpressibleByArgument, CaseIterable {
        case advisor, keda, backlog, aws, all
    }

    @Option(help: "The arrival trace: CSV of minute,arrivals_per_second.")
    var trace: String

    @Option(help: "advisor, keda, backlog, aws, or all (compare, baselines tuned).")
    var policy: PolicyChoice = .all

    @Option(help: "keda / backlog / aws: jobs per host (default: tuned as in --policy all; aws: wait target / service time).")
    var target: Double?

    @Option(help: "Mean seconds per image per host.")
    var serviceTime = 0.47

    @OptionGroup var sizing: SizingOptions

    @Option(help: "Seconds between scaling decisions.", transform: DurationArgument.parse)
    var interval = DurationArgument(duration: .seconds(30))

    @Option(help: "Scale-in stabilisation window.", transform: DurationArgument.parse)
    var stabilisationWindow = DurationArgument(duration: .seconds(300))

    @Option(name: .customLong("enqueued-ahead"), help: "Arrivals enqueued ahead as scheduled jobs (run_after) in a UTC window of the trace, e.g. 01:00-01:15=20 (jobs/s of the trace's rate there), repeatable: the advisor sizes for them from what is scheduled, with no --expect.", transform: ForecastArgument.parse)
    var enqueuedAhead: [ArrivalForecast] = []

    @Option(help: "How long before they come due the --enqueued-ahead jobs are enqueued.", transform: DurationArgument.parse)
    var schedulingLead = DurationArgument(duration: .seconds(3600))

    @Option(help: "Dollars per host-hour.")
    var pricePerHour = 0.17

    @Option(help: "Random seed (the same seed gives the same result).")
    var seed: UInt64 = 20_261_122

    @Flag(help: "JSON output.")
    var json = false

    func validate() throws {
        guard serviceTime > 0 else { throw ValidationError("--service-time must be positive") }
        guard interval.duration > .zero else { throw ValidationError("--interval must be longer than zero") }
        if let target, target <= 0 { throw ValidationError("--target must be positive") }
    }

    /// Reads minute,arrivals_per_second rows (a header line is skipped).
    static func readTrace(_ path: String) throws -> [Double] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw UsageError(description: "cannot read the trace \(path): \(error.localizedDescription)")
        }
        var rates: [Double] = []
        for (number, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let fields = line.split(separator: ",")
            if number == 0 && Double(fields.first ?? "") == nil { continue }
            guard fields.count == 2, let rate = Double(fields[1].trimmingCharacters(in: .whitespaces)), rate >= 0 else {
                throw UsageError(description: "\(path), line \(number + 1): expected minute,arrivals_per_second with a rate ≥ 0, got '\(line)'")
            }
            rates.append(rate)
        }
        guard !rates.isEmpty else { throw UsageError(description: "\(path) has no rows") }
        return rates
    }

    func run() throws {
        let scaling = sizing.policy
        // Minutes are judged by their mean wait; the advisor may size for a percentile (--wait-percentile).
        let objective = WaitObjective(target: scaling.objective.target)
        var simulation = FleetSimulation(trace: try Self.readTrace(trace), serviceTime: serviceTime, objective: objective)
        simulation.startupLag = scaling.startupLag
        simulation.interval = interval.duration.seconds
        simulation.stabilisationWindow = stabilisationWindow.duration.seconds
        simulation.pricePerHour = pricePerHour
        simulation.minimumHosts = scaling.minimumInstances
        simulation.maximumHosts = scaling.maximumInstances
        simulation.seed = seed
        simulation.enqueuedAhead = enqueuedAhead
        simulation.schedulingLead = schedulingLead.duration.seconds
        if !scaling.forecasts.isEmpty { simulation.scheduledFloor = scaling }
        let outcomes: [SimulationOutcome]
        var verdict: String?
        switch (policy, target) {
        case (.all, _):
            let comparison = PolicyComparison.run(simulation, policy: scaling)
            if json { return print(try AdviceReport.json(comparison)) }
            outcomes = [comparison.advisor, comparison.keda, comparison.backlog, comparison.aws]
            verdict = comparison.advisorMeetsTarget
                ? "target met: the advisor meets the objective in ≥ 99% of minutes at no more host-hours than the best tuned rule that does"
                : "target NOT met: the advisor misses 99% of minutes, or a tuned rule meets it with fewer host-hours"
        case (.advisor, _): outcomes = [simulation.run(.advisor(scaling))]
        case (.keda, let target?): outcomes = [simulation.run(.keda(target: target))]
        case (.backlog, let target?): outcomes = [simulation.run(.backlog(perInstance: target))]
        case (.keda, nil): outcomes = [PolicyComparison.run(simulation, policy: scaling).keda]
        case (.backlog, nil): outcomes = [PolicyComparison.run(simulation, policy: scaling).backlog]
        case (.aws, let target): outcomes = [simulation.run(.awsTargetTracking(acceptableBacklog: target ?? PolicyComparison.acceptableBacklog(simulation)))]
        }
        if json { return print(try AdviceReport.json(outcomes)) }
        print(String(format: "%@: %d minutes, objective: %@, S = %.3g s, start-up lag %.0f s, every %.0f s, window %.0f s",
                     trace, simulation.trace.count, objective.description, serviceTime, simulation.startupLag, simulation.interval,
                     simulation.stabilisationWindow))
        var table = TextTable(header: ["RULE", "MINUTES MEETING", "WAIT P50", "P95", "P99", "HOST-HOURS", "COST", "JOBS"])
        for outcome in outcomes {
            table.rows.append([outcome.rule, String(format: "%.2f%%", outcome.meetingShare * 100), String(format: "%.0f ms", outcome.waitP50 * 1000),
                               String(format: "%.0f ms", outcome.waitP95 * 1000), String(format: "%.0f ms", outcome.waitP99 * 1000),
                               String(format: "%.1f", outcome.instanceHours), String(format: "$%.2f", outcome.cost), String(outcome.jobs)])
        }
        print(table.render())
        if let verdict { print(verdict) }
    }
}
