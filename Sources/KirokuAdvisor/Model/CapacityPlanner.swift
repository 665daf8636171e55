import Foundation

/// One rule's answer, with its working, so an operator sees why the fleet has the size it has.
public struct SizingTerm: Sendable, Equatable, Codable {
    /// The rule: minimum, utilisation_floor, backlog_per_instance, erlang_c, drain, forecast, scheduled.
    public var rule: String
    /// The hosts this rule asks for.
    public var instances: Int
    /// The rule's arithmetic in words.
    public var working: String
}

/// How many hosts a pool needs, and why.
public struct Sizing: Sendable, Equatable, Codable {
    /// Every rule's answer.
    public var terms: [SizingTerm]
    /// The largest answer.
    public var desired: Int
    /// `desired` clamped to the policy's minimum and maximum.
    public var recommended: Int
    /// Set when the maximum clamped the answer: the objective is then not met.
    public var limitedByMaximum: Bool
    /// The queue at `recommended` hosts: mean wait (seconds), probability of waiting longer than
    /// the target, mean utilisation.
    public var meanWait: Double, probabilityOverTarget: Double, utilisation: Double
}

/// The sizing rules. Desired hosts = the largest of: the minimum; the utilisation floor
/// (a / maximum utilisation); backlog per instance (backlog / (1 + wait target / S)); Erlang C (the
/// fewest hosts meeting the wait objective); and the drain rule (clear the backlog, grown by the
/// start-up lag, within the drain target while arrivals continue: a + B·S / T); and the forecast
/// rules (the policy's `--expect` windows, and the jobs already scheduled to come due). Then clamped.
public enum CapacityPlanner {
    /// Sizes one pool.
    public static func size(_ observation: PoolObservation, policy: ScalingPolicy) -> Sizing {
        let (lambda, s) = (observation.arrivalRate, observation.serviceTime)
        let a = lambda * s
        var terms: [SizingTerm] = []
        terms.append(SizingTerm(rule: "minimum", instances: policy.minimumInstances, working: "the policy's minimum"))

        let floor = Int((a / policy.maximumUtilisation - 1e-9).rounded(.up))
        terms.append(SizingTerm(rule: "utilisation_floor", instances: floor, working: String(
            format: "load a = λ·S = %.3g/s × %.3gs = %.3g hosts busy; at most %.0f%% busy: ⌈a / %.2f⌉ = %d",
            lambda, s, a, policy.maximumUtilisation * 100, policy.maximumUtilisation, floor)))

        // Each host holds the job it is serving plus what may wait behind it within the target.
        let perInstance = 1 + policy.objective.target / s
        let backlogTerm = Int((Double(observation.backlog) / perInstance - 1e-9).rounded(.up))
        terms.append(SizingTerm(rule: "backlog_per_instance", instances: backlogTerm, working: String(
            format: "acceptable backlog per host = 1 in service + wait target / S = 1 + %.3gs / %.3gs = %.3g jobs; backlog %d (due %d + running %d): %d",
            policy.objective.target, s, perInstance, observation.backlog, observation.queued, observation.running, backlogTerm)))

        let erlang = ErlangC.servers(arrivalRate: lambda, serviceTime: s, meeting: policy.objective)
        let atErlang = ErlangC(arrivalRate: lambda, serviceTime: s, servers: erlang)
        let below = erlang > 1 ? ErlangC(arrivalRate: lambda, serviceTime: s, servers: erlang - 1) : nil
        terms.append(SizingTerm(rule: "erlang_c", instances: erlang, working: "M/M/c for \(policy.objective.description): "
            + "\(erlang) hosts give \(waitText(atErlang, policy.objective))"
            + (below.map { $0.isStable ? ", \(erlang - 1) give \(waitText($0, policy.objective))" : ", \(erlang - 1) cannot keep up" } ?? "")))

        let current = observation.currentInstances.map(Double.init)
        // New hosts help only after the start-up lag; meanwhile the backlog grows by what the
        // current hosts cannot serve.
        let growth = current.map { max(0, lambda - $0 / s) * policy.startupLag } ?? 0
        let effectiveBacklog = Double(observation.backlog) + growth
        let window = max(policy.drainTarget - (growth > 0 ? policy.startupLag : 0), s)
        let drain = effectiveBacklog > 0 ? Int((a + effectiveBacklog * s / window - 1e-9).rounded(.up)) : 0
        let drainWorking = effectiveBacklog > 0 ? String(
            format: "clear a backlog of %.0f jobs (%d now%@) within %.0fs while arrivals continue: ⌈a + B·S / T⌉ = ⌈%.3g + %.0f × %.3g / %.0f⌉ = %d",
            effectiveBacklog, observation.backlog, growth > 0 ? String(format: " + %.0f arriving during the %.0fs start-up lag", growth, policy.startupLag) : "",
            window, a, effectiveBacklog, s, window, drain) : "no backlog to drain"
        terms.append(SizingTerm(rule: "drain", instances: drain, working: drainWorking))
        if let forecast = forecastTerm(policy: policy, serviceTime: s, at: observation.observedAt) { terms.append(forecast) }
        if let scheduled = observation.scheduled.flatMap({ scheduledTerm($0, policy: policy, serviceTime: s) }) { terms.append(scheduled) }

        let desired = terms.map(\.instances).max() ?? policy.minimumInstances
        let recommended = min(max(desired, policy.minimumInstances), policy.maximumInstances)
        let queue = ErlangC(arrivalRate: lambda, serviceTime: s, servers: max(recommended, 1))
        return Sizing(terms: terms, desired: desired, recommended: recommended, limitedByMaximum: desired > policy.maximumInstances,
                      meanWait: queue.meanWait, probabilityOverTarget: queue.probabilityOfWaitingLonger(than: policy.objective.target),
                      utilisation: queue.utilisation)
    }

    /// The hosts the policy's forecasts ask for at `time` (nil without forecasts): Erlang C at the
    /// highest forecast rate whose window is open or opens within the start-up lag.
    public static func forecastTerm(policy: ScalingPolicy, serviceTime s: Double, at time: Date) -> SizingTerm? {
        guard !policy.forecasts.isEmpty else { return nil }
        guard let forecast = policy.forecasts.filter({ $0.isActive(at: time, lead: policy.startupLag) }).max(by: { $0.arrivalRate < $1.arrivalRate }) else {
            return SizingTerm(rule: "forecast", instances: 0, working: "no forecast window open or opening within the start-up lag ("
                              + policy.forecasts.map(\.description).joined(separator: "; ") + ")")
        }
        let hosts = ErlangC.servers(arrivalRate: forecast.arrivalRate, serviceTime: s, meeting: policy.objective)
        let queue = ErlangC(arrivalRate: forecast.arrivalRate, serviceTime: s, servers: hosts)
        return SizingTerm(rule: "forecast", instances: hosts, working: String(
            format: "expected %@, sized from %.0fs before it opens: M/M/c at %g/s for %@: %d hosts give %@",
            forecast.description, policy.startupLag, forecast.arrivalRate, policy.objective.description, hosts, waitText(queue, policy.objective)))
    }

    /// The hosts the jobs already scheduled ask for (nil when none are), from a start-up lag
    /// before they come due: Erlang C at the busiest minute of those due within the lag, on top of
    /// the unscheduled arrivals (a stream, e.g. a re-import spread over its window), but never more
    /// than clearing every job due within the lag and the drain target within the drain target
    /// (a lump, e.g. a batch all due at 01:00, is a backlog to drain, not a rate to serve at once).
    public static func scheduledTerm(_ scheduled: ScheduledArrivals, policy: ScalingPolicy, serviceTime s: Double) -> SizingTerm? {
        guard scheduled.total > 0 else { return nil }
        guard let peak = scheduled.peak(within: policy.startupLag) else {
            return SizingTerm(rule: "scheduled", instances: 0, working: String(
                format: "%d jobs scheduled (%@), none due within the %.0fs start-up lag", scheduled.total,
                scheduled.windows.joined(separator: "; "), policy.startupLag))
        }
        let rate = scheduled.unscheduledArrivalRate + Double(peak.jobs) / 60
        let stream = ErlangC.servers(arrivalRate: rate, serviceTime: s, meeting: policy.objective)
        let soon = scheduled.jobs(within: policy.startupLag + policy.drainTarget)
        let load = scheduled.unscheduledArrivalRate * s
        let drain = Int((load + Double(soon) * s / policy.drainTarget - 1e-9).rounded(.up))
        let hosts = min(stream, drain)
        return SizingTerm(rule: "scheduled", instances: hosts, working: String(
            format: "%d jobs come due in minute %d from now (scheduled: %@), on top of %.3g/s unscheduled arrivals, sized from %.0fs before: as a stream, M/M/c at %.3g/s for %@ needs %d hosts; as a backlog, the %d jobs due within %.0fs cleared within %.0fs, ⌈%.3g + %d × %.3g / %.0f⌉ = %d; the fewer: %d",
            peak.jobs, peak.minute, scheduled.windows.joined(separator: "; "), scheduled.unscheduledArrivalRate, policy.startupLag,
            rate, policy.objective.description, stream, soon, policy.startupLag + policy.drainTarget, policy.drainTarget,
            load, soon, s, policy.drainTarget, drain, hosts))
    }

    private static func waitText(_ queue: ErlangC, _ objective: WaitObjective) -> String {
        if objective.percentile != nil {
            return String(format: "P(wait > target) = %.3g", queue.probabilityOfWaitingLonger(than: objective.target))
        }
        return String(format: "a mean wait of %.0f ms", queue.meanWait * 1000)
    }
}
