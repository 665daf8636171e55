import Foundation
import KirokuAdvisor
import KirokuTestSupport
import Testing

@Suite("Fleet simulation", .subprocesses)
struct SimulationTests {
    static func steady(minutes: Int = 20, rate: Double = 10) -> FleetSimulation {
        var simulation = FleetSimulation(trace: Array(repeating: rate, count: minutes), serviceTime: 0.47, objective: WaitObjective(target: 0.1))
        simulation.startupLag = 60
        simulation.minimumHosts = 7
        return simulation
    }

    @Test("repeatable: the same seed gives the same outcome, another seed another")
    func repeatable() {
        var simulation = Self.steady(minutes: 5)
        let first = simulation.run(.keda(target: 2)), second = simulation.run(.keda(target: 2))
        #expect(first == second)
        simulation.seed = 7
        #expect(simulation.run(.keda(target: 2)).jobs != first.jobs)
    }

    @Test("steady load of the project's example (10/s at 0.47 s, 100 ms): the advisor keeps at least Erlang C's 7 hosts and meets the objective; 5 hosts miss it")
    func steadyLoad() {
        let simulation = Self.steady()
        let outcome = simulation.run(.advisor(ScalingPolicy(objective: WaitObjective(target: 0.1))))
        #expect(abs(Double(outcome.jobs) - 12_000) < 5 * 12_000.0.squareRoot(), "Poisson arrivals: \(outcome.jobs)")
        // 7 hosts for 20 minutes is 2.33 host-hours; random queue swings make the backlog rule
        // add hosts now and then, and the stabiliser keeps them for its window.
        #expect(outcome.instanceHours >= 7 * 20.0 / 60 - 1e-9 && outcome.instanceHours < 12 * 20.0 / 60, "\(outcome.instanceHours)")
        #expect(outcome.meetingShare >= 0.75, "\(outcome.minutesMeeting) of \(outcome.minutes)")
        // Fewer hosts than Erlang C asks for miss it: 5 hosts at 94% busy wait about 1.3 s.
        var starved = simulation
        starved.minimumHosts = 5
        starved.maximumHosts = 5
        #expect(starved.run(.keda(target: 1_000)).meetingShare < 0.2)
    }

    @Test("the comparison tunes the baselines on the trace and says whether the advisor met the target")
    func comparison() {
        var simulation = FleetSimulation(trace: Array(repeating: 2, count: 5) + Array(repeating: 8, count: 10), serviceTime: 0.47,
                                         objective: WaitObjective(target: 0.5))
        simulation.startupLag = 30
        let comparison = PolicyComparison.run(simulation, policy: ScalingPolicy(objective: WaitObjective(target: 0.5)), requiredShare: 0.8)
        #expect(comparison.keda.rule.hasPrefix("keda (target") && comparison.backlog.rule.hasPrefix("backlog ("))
        let rivals = [comparison.keda, comparison.backlog].filter { $0.meetingShare >= 0.8 }.map(\.instanceHours)
        #expect(comparison.advisorMeetsTarget == (comparison.advisor.meetingShare >= 0.8 && comparison.advisor.instanceHours <= (rivals.min() ?? .infinity) + 1e-9))
    }

    @Test("kiroku simulate reads the shipped traces and says what is wrong with a bad one")
    func command() async throws {
        let trace = NSTemporaryDirectory() + "kiroku-trace-\(UUID().uuidString.prefix(6)).csv"
        defer { try? FileManager.default.removeItem(atPath: trace) }
        try "minute,arrivals_per_second\n0,2\n1,3\n2,2\n".write(toFile: trace, atomically: true, encoding: .utf8)
        let run = try await KirokuProcess.run(["simulate", "--trace", trace, "--policy", "advisor", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let outcomes = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]]
        #expect(outcomes?.first?["minutes"] as? Int == 3 && outcomes?.first?["rule"] as? String == "advisor")
        let percentile = try await KirokuProcess.run(["simulate", "--trace", trace, "--policy", "advisor", "--wait-percentile", "90"])
        #expect(percentile.status == 0 && percentile.stdout.contains("advisor (sized for p90)"), "\(percentile.stdout)\(percentile.stderr)")
        try "minute,arrivals_per_second\n0,2\n1,lots\n".write(toFile: trace, atomically: true, encoding: .utf8)
        let bad = try await KirokuProcess.run(["simulate", "--trace", trace])
        #expect(bad.status == 2 && bad.stderr.contains("line 3") && bad.stderr.contains("'1,lots'"), "\(bad.stderr)")
        let shipped = SizingRuleTests.root.appendingPathComponent("Benchmarks/traces")
        for name in ["diurnal.csv", "burst.csv"] {
            #expect(FileManager.default.fileExists(atPath: shipped.appendingPathComponent(name).path), "\(name) (scripts/make-traces.py)")
        }
    }
}

@Suite("AWS target tracking as AWS runs it")
struct TargetTrackingTests {
    @Test("out after 3 breaching minutes, in after 15 minutes below 90% of the target, both to ⌈in service × metric / target⌉ within the group's bounds; a minute with nothing in service breaks a streak")
    func alarms() {
        var group = TargetTrackingAlarms(capacity: 4, minimum: 2, maximum: 10)
        // Backlog 12 on 4 in service = 3 per host against a target of 1: out only on the third minute, to 12.
        #expect(group.decide(at: 0, queued: 12, inService: 4, target: 1) == 4)
        #expect(group.decide(at: 30, queued: 12, inService: 4, target: 1) == 4, "one datapoint a minute")
        #expect(group.decide(at: 60, queued: 12, inService: 4, target: 1) == 4)
        #expect(group.decide(at: 120, queued: 12, inService: 4, target: 1) == 10, "3 minutes above: ⌈4 × 3 / 1⌉ = 12, the maximum 10")
        // While new hosts warm up, the backlog seen per in-service host stays high: never below the desired capacity.
        #expect(group.decide(at: 180, queued: 6, inService: 4, target: 1) == 10)
        // An empty queue: 14 minutes change nothing, the 15th scales in to the minimum.
        for minute in 4..<18 { #expect(group.decide(at: Double(minute * 60), queued: 0, inService: 10, target: 1) == 10) }
        #expect(group.decide(at: 18 * 60, queued: 0, inService: 10, target: 1) == 2, "15 minutes below 0.9: ⌈0⌉, the minimum 2")
        // A minute with no host in service (no datapoint) breaks the next streak.
        var other = TargetTrackingAlarms(capacity: 3, minimum: 1, maximum: 20)
        _ = other.decide(at: 0, queued: 9, inService: 3, target: 1)
        _ = other.decide(at: 60, queued: 9, inService: 0, target: 1)
        #expect(other.decide(at: 120, queued: 9, inService: 3, target: 1) == 3)
        #expect(other.decide(at: 240, queued: 9, inService: 3, target: 1) == 3)
        #expect(other.decide(at: 300, queued: 9, inService: 3, target: 1) == 9, "three in a row again: ⌈3 × 3⌉")
    }

    @Test("in the comparison: untuned, on AWS's acceptable backlog (latency target / service time)")
    func inComparison() {
        let simulation = FleetSimulation(trace: Array(repeating: 2, count: 30), serviceTime: 0.5, objective: WaitObjective(target: 1))
        #expect(PolicyComparison.acceptableBacklog(simulation) == 2)
        let comparison = PolicyComparison.run(simulation, policy: ScalingPolicy(objective: WaitObjective(target: 1)))
        #expect(comparison.aws.rule == "aws target tracking (2 per host, as AWS runs it)")
        #expect(comparison.aws.jobs == comparison.advisor.jobs)
    }
}
