import Foundation
import KirokuRandom
import KirokuSupport

/// A scaling rule the simulation can apply every interval.
public enum ScalingRule: Sendable, Equatable {
    /// The advisor: every sizing rule (Erlang C for the objective), as `kiroku autoscaler` applies it.
    case advisor(ScalingPolicy)
    /// KEDA's rule: ceil((queued + running) / target).
    case keda(target: Double)
    /// AWS's backlog-per-instance target tracking: ceil(queued / acceptable backlog per instance)
    /// (its queue metric counts waiting messages, not those in flight).
    case backlog(perInstance: Double)
    /// AWS target tracking on backlog per instance as an Auto Scaling group runs it: the metric is
    /// visible messages over InService instances, one datapoint a minute (none while no instance is
    /// in service); scale out when 3 datapoints in a row exceed the target, in when 15 in a row are
    /// below 90% of it, both to ⌈InService × metric / target⌉ (out: never below the current desired
    /// capacity, whose warming instances count), clamped to the group's minimum and maximum, with
    /// no other stabilisation. The target is the acceptable backlog, latency target / service time.
    case awsTargetTracking(acceptableBacklog: Double)

    /// The rule's name and parameter, for reports.
    public var description: String {
        switch self {
        case .advisor(let policy): policy.objective.percentile.map { String(format: "advisor (sized for p%g)", $0 * 100) } ?? "advisor"
        case .keda(let target): String(format: "keda (target %g jobs per host)", target)
        case .backlog(let perInstance): String(format: "backlog (%g jobs per host)", perInstance)
        case .awsTargetTracking(let backlog): String(format: "aws target tracking (%.3g per host, as AWS runs it)", backlog)
        }
    }
}

/// What a simulated day (or burst) cost and how well it waited.
public struct SimulationOutcome: Sendable, Equatable, Codable {
    /// The rule, described.
    public var rule: String
    /// Minutes simulated, and those whose arrivals met the wait objective.
    public var minutes: Int, minutesMeeting: Int
    /// Queue-wait percentiles over all jobs, seconds.
    public var waitP50: Double, waitP95: Double, waitP99: Double
    /// Host-hours paid for (booting and draining hosts included), and their cost.
    public var instanceHours: Double, cost: Double
    /// Jobs served.
    public var jobs: Int

    /// The share of minutes meeting the objective.
    public var meetingShare: Double { minutes > 0 ? Double(minutesMeeting) / Double(minutes) : 1 }
}

/// A discrete-event simulation of a fleet: Poisson arrivals at each minute's rate from a trace,
/// exponential service times with the measured mean, one job per host at a time from one FIFO
/// queue, hosts that help only after the start-up lag, a scaling rule applied every interval
/// through the same stabiliser as the autoscaler (out at once, in after the window); retired
/// hosts finish their job first. The fleet starts from the rule's own steady state: the trace's
/// first minute is repeated for a warm-up that is simulated but not counted. Seeded: the same
/// inputs give the same outcome.
public struct FleetSimulation: Sendable {
    /// Arrivals per second, one value per minute.
    public var trace: [Double]
    /// Mean seconds per image per host.
    public var serviceTime: Double
    /// The wait objective (also what the advisor rule sizes for).
    public var objective: WaitObjective
    /// Seconds from asking for a host to its first job.
    public var startupLag: Double = 120
    /// Seconds between scaling decisions.
    public var interval: Double = 30
    /// The scale-in stabilisation window, seconds.
    public var stabilisationWindow: Double = 300
    /// Minutes at the trace's first rate simulated before minute 0 and left out of the outcome.
    public var warmUpMinutes = 15
    /// Bounds on the fleet.
    public var minimumHosts = 1, maximumHosts = 200
    /// Dollars per host-hour.
    public var pricePerHour: Double = 0.17
    /// The random seed.
    public var seed: UInt64 = 20_261_122
    /// When set, every rule gets at least this policy's forecast term (`CapacityPlanner.forecastTerm`)
    /// while a forecast window is open or about to open: the count an operator would give KEDA's cron
    /// trigger or a scheduled scaling action, from the advisor's what-if at the forecast rate. Trace
    /// minute 0 is 00:00 UTC.
    public var scheduledFloor: ScalingPolicy?

    /// Parts of the trace enqueued ahead as scheduled jobs (run_after at their arrival) a
    /// `schedulingLead` before they come due: in each window, this rate of the trace's arrivals
    /// (at most all of them). The advisor sees them as `QueueMeasurements` would (per minute,
    /// two hours ahead, once enqueued); the other rules, which count the queue, do not.
    public var enqueuedAhead: [ArrivalForecast] = []
    /// How long before they come due the `enqueuedAhead` jobs are enqueued, seconds.
    public var schedulingLead: Double = 3600

    /// Creates a simulation.
    public init(trace: [Double], serviceTime: Double, objective: WaitObjective) {
        self.trace = trace
        self.serviceTime = serviceTime
        self.objective = objective
    }

    private struct Host {
        var createdAt: Double
        var readyAt: Double
        var busyUntil: Double
        var retiring = false
    }

    /// Runs the trace under `rule`.
    public func run(_ rule: ScalingRule) -> SimulationOutcome {
        var random = SplitMix64(seed: seed)
        var arrivals: [Double] = []
        let warmUp = Double(warmUpMinutes) * 60
        for (index, rate) in (Array(repeating: trace[0], count: warmUpMinutes) + trace).enumerated() where rate > 0 {
            let minute = index - warmUpMinutes
            var t = Double(minute) * 60
            while true {
                t += -log(1 - random.unit()) / rate
                if t >= Double(minute + 1) * 60 { break }
                arrivals.append(t)
            }
        }
        let scheduled = markScheduled(arrivals)
        let end = Double(trace.count) * 60
        var hosts = (0..<max(minimumHosts, 1)).map { _ in Host(createdAt: -warmUp, readyAt: -warmUp, busyUntil: -warmUp) }
        var hostSeconds = 0.0
        // Host time paid for from minute 0 on.
        func paid(_ host: Host, until time: Double) -> Double { max(0, time - max(host.createdAt, 0)) }
        var queue: [Int] = []
        var queueHead = 0
        var waits = [Double](repeating: 0, count: arrivals.count)
        var stabiliser = Stabiliser(window: stabilisationWindow)
        var aws = TargetTrackingAlarms(capacity: hosts.count, minimum: minimumHosts, maximum: maximumHosts)
        var nextArrival = 0

        // Starts queued jobs on hosts that free up before `time`, earliest host first (FIFO).
        func dispatch(until time: Double) {
            while queueHead < queue.count {
                guard let index = hosts.indices.filter({ !hosts[$0].retiring }).min(by: {
                    max(hosts[$0].readyAt, hosts[$0].busyUntil) < max(hosts[$1].readyAt, hosts[$1].busyUntil)
                }) else { return }
                let free = max(hosts[index].readyAt, hosts[index].busyUntil)
                let job = queue[queueHead]
                let start = max(free, arrivals[job])
                guard start < time else { return }
                waits[job] = start - arrivals[job]
                hosts[index].busyUntil = start + -log(1 - random.unit()) * serviceTime
                queueHead += 1
            }
        }

        var tick = -warmUp
        while tick < end {
            while nextArrival < arrivals.count && arrivals[nextArrival] < tick {
                dispatch(until: arrivals[nextArrival])
                queue.append(nextArrival)
                nextArrival += 1
            }
            dispatch(until: tick)
            // Retired hosts leave once their last job is done.
            hosts.removeAll { host in
                guard host.retiring && host.busyUntil <= tick else { return false }
                hostSeconds += paid(host, until: host.busyUntil)
                return true
            }
            let floor = scheduledFloor.flatMap {
                CapacityPlanner.forecastTerm(policy: $0, serviceTime: serviceTime, at: Date(timeIntervalSince1970: tick))?.instances
            } ?? 0
            let published: Int
            if case .awsTargetTracking(let target) = rule {
                let inService = hosts.filter { !$0.retiring && $0.readyAt <= tick }.count
                published = max(floor, aws.decide(at: tick, queued: queue.count - queueHead, inService: inService, target: target))
            } else {
                let desired = max(floor, decide(rule, at: tick, since: -warmUp, arrivals: arrivals, scheduled: scheduled, arrived: nextArrival,
                                                queued: queue.count - queueHead, hosts: hosts))
                published = min(max(stabiliser.publish(desired, at: Date(timeIntervalSince1970: tick)), minimumHosts), maximumHosts)
            }
            for host in resize(&hosts, to: published, at: tick) { hostSeconds += paid(host, until: tick) }
            tick += interval
        }
        while nextArrival < arrivals.count {
            dispatch(until: arrivals[nextArrival])
            queue.append(nextArrival)
            nextArrival += 1
        }
        dispatch(until: .infinity)
        for host in hosts { hostSeconds += paid(host, until: max(end, host.busyUntil)) }
        return outcome(rule, arrivals: arrivals, waits: waits, hostSeconds: hostSeconds)
    }

    /// Which arrivals were enqueued ahead (`enqueuedAhead`), drawn from a stream of their own so
    /// that the arrivals are the same with and without it.
    private func markScheduled(_ arrivals: [Double]) -> [Bool] {
        guard !enqueuedAhead.isEmpty else { return Array(repeating: false, count: arrivals.count) }
        var random = SplitMix64(seed: seed ^ 0x5C4E_D01E)
        return arrivals.map { time in
            let rate = trace[max(0, min(trace.count - 1, Int((time / 60).rounded(.down))))]
            guard rate > 0, let window = enqueuedAhead.first(where: { $0.isActive(at: Date(timeIntervalSince1970: time), lead: 0) }) else {
                return false
            }
            return random.unit() < min(1, window.arrivalRate / rate)
        }
    }

    /// What `QueueMeasurements` would report of the scheduled jobs at `time`: those enqueued by
    /// then (a `schedulingLead` ahead) and not yet due, per minute for two hours, and the rate of
    /// the arrivals that were not scheduled.
    private func scheduledArrivals(at time: Double, arrivals: [Double], scheduled: [Bool], arrived: Int,
                                   unscheduledRate: Double) -> ScheduledArrivals? {
        guard !enqueuedAhead.isEmpty else { return nil }
        var perMinute = Array(repeating: 0, count: 120)
        var index = arrived
        while index < arrivals.count && arrivals[index] < time + min(schedulingLead, 7200) {
            if scheduled[index] { perMinute[Int((max(arrivals[index] - time, 0) / 60).rounded(.down))] += 1 }
            index += 1
        }
        return ScheduledArrivals(perMinute: perMinute, unscheduledArrivalRate: unscheduledRate)
    }

    private func decide(_ rule: ScalingRule, at time: Double, since start: Double, arrivals: [Double], scheduled: [Bool], arrived: Int,
                        queued: Int, hosts: [Host]) -> Int {
        let running = hosts.filter { $0.busyUntil > time }.count
        switch rule {
        case .keda(let target):
            return Int((Double(queued + running) / target).rounded(.up))
        case .backlog(let perInstance):
            return Int((Double(queued) / perInstance).rounded(.up))
        case .awsTargetTracking:
            preconditionFailure("target tracking keeps its own alarms: TargetTrackingAlarms")
        case .advisor(let policy):
            // What QueueMeasurements would see: the busier of the last minute and the last 15.
            // Counted over every arrival, or (for the scheduled rule) those that were not scheduled.
            func rate(_ window: Double, unscheduledOnly: Bool = false) -> Double {
                let since = time - window
                var count = 0
                var index = arrived - 1
                while index >= 0 && arrivals[index] >= since {
                    if !(unscheduledOnly && scheduled[index]) { count += 1 }
                    index -= 1
                }
                return Double(count) / min(window, max(time - start, 1))
            }
            let live = hosts.filter { !$0.retiring && $0.readyAt <= time }.count
            let upcoming = scheduledArrivals(at: time, arrivals: arrivals, scheduled: scheduled, arrived: arrived,
                                             unscheduledRate: enqueuedAhead.isEmpty ? 0 : max(rate(60, unscheduledOnly: true), rate(900, unscheduledOnly: true)))
            let observation = PoolObservation(pool: "sim", arrivalRate: max(rate(60), rate(900)), serviceTime: serviceTime,
                                              queued: queued, running: running, currentInstances: live,
                                              observedAt: Date(timeIntervalSince1970: time), scheduled: upcoming)
            return CapacityPlanner.size(observation, policy: policy).recommended
        }
    }

    /// Starts or retires hosts to reach `target`; returns those that left.
    private func resize(_ hosts: inout [Host], to target: Int, at time: Double) -> [Host] {
        var active = hosts.filter { !$0.retiring }.count
        while active < target {
            hosts.append(Host(createdAt: time, readyAt: time + startupLag, busyUntil: 0))
            active += 1
        }
        guard active > target else { return [] }
        // Cancel hosts still starting, then release idle ones, then let busy ones finish.
        for preference in 0..<3 {
            for index in hosts.indices.reversed() where active > target && !hosts[index].retiring {
                let host = hosts[index]
                let starting = host.readyAt > time, idle = host.readyAt <= time && host.busyUntil <= time
                guard (preference == 0 && starting) || (preference == 1 && idle) || preference == 2 else { continue }
                hosts[index].retiring = true
                active -= 1
            }
        }
        let leaving = hosts.filter { $0.retiring && $0.busyUntil <= time }
        hosts.removeAll { $0.retiring && $0.busyUntil <= time }
        return leaving
    }

    private func outcome(_ rule: ScalingRule, arrivals: [Double], waits: [Double], hostSeconds: Double) -> SimulationOutcome {
        var perMinute = [[Double]](repeating: [], count: trace.count)
        var counted: [Double] = []
        for (arrival, wait) in zip(arrivals, waits) where arrival >= 0 {
            perMinute[min(Int(arrival / 60), trace.count - 1)].append(wait)
            counted.append(wait)
        }
        let meeting = perMinute.filter { waits in
            guard !waits.isEmpty else { return true }
            if let percentile = objective.percentile {
                let sorted = waits.sorted()
                return sorted[min(sorted.count - 1, Int(Double(sorted.count) * percentile))] <= objective.target
            }
            return waits.reduce(0, +) / Double(waits.count) <= objective.target
        }.count
        let sorted = counted.sorted()
        return SimulationOutcome(rule: rule.description, minutes: trace.count, minutesMeeting: meeting, waitP50: percentile(sorted: sorted, 0.5),
                                 waitP95: percentile(sorted: sorted, 0.95), waitP99: percentile(sorted: sorted, 0.99), instanceHours: hostSeconds / 3600,
                                 cost: hostSeconds / 3600 * pricePerHour, jobs: counted.count)
    }
}

/// The two CloudWatch alarms an AWS target tracking policy on backlog per instance creates, and the
/// desired capacity they set (`ScalingRule.awsTargetTracking`).
public struct TargetTrackingAlarms: Sendable {
    /// The group's desired capacity.
    public private(set) var capacity: Int
    /// The group's bounds.
    public let minimum: Int, maximum: Int
    private var datapoints: [Double?] = []
    private var lastMinute = Int.min

    /// A group at `capacity` within its bounds.
    public init(capacity: Int, minimum: Int, maximum: Int) {
        self.capacity = capacity
        self.minimum = minimum
        self.maximum = maximum
    }

    /// One decision at `time` (seconds): a datapoint (queued / in service) at each new minute, then
    /// the alarms; returns the desired capacity.
    public mutating func decide(at time: Double, queued: Int, inService: Int, target: Double) -> Int {
        let minute = Int((time / 60).rounded(.down))
        guard minute != lastMinute else { return capacity }
        lastMinute = minute
        datapoints.append(inService > 0 ? Double(queued) / Double(inService) : nil)
        func last(_ count: Int, _ test: (Double) -> Bool) -> Bool {
            datapoints.count >= count && datapoints.suffix(count).allSatisfy { $0.map(test) ?? false }
        }
        guard let metric = datapoints.last ?? nil else { return capacity }
        let proportional = Int((Double(inService) * metric / target - 1e-9).rounded(.up))
        if last(3, { $0 > target }) {
            capacity = min(max(capacity, proportional), maximum)
        } else if last(15, { $0 < 0.9 * target }) {
            capacity = max(min(capacity, proportional), minimum)
        }
        return capacity
    }
}
