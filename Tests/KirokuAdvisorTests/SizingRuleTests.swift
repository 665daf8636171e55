import Foundation
import KirokuAdvisor
import KirokuTestSupport
import Testing

@Suite("Sizing rules, cost and the what-if command", .subprocesses)
struct SizingRuleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func catalog() throws -> InstanceCatalog {
        try InstanceCatalog.load(root.appendingPathComponent("catalog/instances.json"))
    }

    static func term(_ sizing: Sizing, _ rule: String) -> Int {
        sizing.terms.first { $0.rule == rule }?.instances ?? -1
    }

    @Test("each rule on inputs where it decides")
    func rules() {
        var policy = ScalingPolicy(objective: WaitObjective(target: 0.1))
        let base = PoolObservation(pool: "cpu", arrivalRate: 10, serviceTime: 0.47)
        // Erlang C decides: 7.
        let plain = CapacityPlanner.size(base, policy: policy)
        #expect(Self.term(plain, "erlang_c") == 7 && plain.recommended == 7 && Self.term(plain, "utilisation_floor") == 6)
        // The utilisation floor decides when hosts may be only half busy: ⌈4.7 / 0.5⌉ = 10.
        policy.maximumUtilisation = 0.5
        #expect(CapacityPlanner.size(base, policy: policy).recommended == 10)
        policy.maximumUtilisation = 0.85
        // Backlog per instance: each host serves one and may queue 0.1 s / 0.47 s = 0.213 more:
        // 200 queued + 10 running: ⌈210 / 1.2128⌉ = 174.
        var backlog = base
        backlog.queued = 200
        backlog.running = 10
        let sized = CapacityPlanner.size(backlog, policy: policy)
        #expect(Self.term(sized, "backlog_per_instance") == 174)
        #expect(sized.recommended == 100 && sized.limitedByMaximum, "clamped to the maximum, and it says so")
        // The drain rule: 6,000 queued within 300 s: ⌈4.7 + 6000 × 0.47 / 300⌉ = 15.
        var drain = base
        drain.queued = 6000
        policy.objective = WaitObjective(target: 3600)
        #expect(Self.term(CapacityPlanner.size(drain, policy: policy), "drain") == 15)
        // With 2 hosts now (4.26 images/s), 120 s of start-up lag adds (10 − 4.26) × 120 = 689
        // jobs and leaves 180 s: ⌈4.7 + 6689 × 0.47 / 180⌉ = 23.
        drain.currentInstances = 2
        #expect(Self.term(CapacityPlanner.size(drain, policy: policy), "drain") == 23)
        // The minimum decides when there is no load.
        policy.minimumInstances = 3
        #expect(CapacityPlanner.size(PoolObservation(pool: "cpu", arrivalRate: 0, serviceTime: 0.47), policy: policy).recommended == 3)
    }

    @Test("cost per million images at saturation and at the measured utilisation; spot blends")
    func cost() throws {
        let catalog = try Self.catalog()
        let c5 = try catalog.price(of: try catalog.instance("c5.xlarge"), in: "us-east-1")
        let g2 = try catalog.price(of: try catalog.instance("g2.2xlarge"), in: "us-east-1")
        // The project's figures: about $22 per million on c5.xlarge at 0.47 s, about $13 on g2.2xlarge at 0.072 s.
        let cpu = CostEstimate(region: "us-east-1", price: c5, spotFraction: 0, instances: 7, serviceTime: 0.47, utilisation: 0.5)
        #expect(abs(cpu.perMillionAtSaturation - 22.19) < 0.01 && abs(cpu.perMillionAtUtilisation - 44.39) < 0.01)
        #expect(abs(cpu.poolPerHour - 1.19) < 1e-9)
        let gpu = CostEstimate(region: "us-east-1", price: g2, spotFraction: 0.5, instances: 1, serviceTime: 0.072, utilisation: 0.2)
        #expect(abs(gpu.perMillionAtSaturation - 13.0) < 0.01, "no spot price: the blend stays on-demand")
        #expect(gpu.spotFraction == 0 && abs(gpu.perMillionAtUtilisation - 65.0) < 0.01)
        let blended = CostEstimate(region: "us-east-1", price: c5, spotFraction: 0.5, instances: 4, serviceTime: 0.47, utilisation: 1)
        #expect(abs(blended.blendedPerHour - 0.1275) < 1e-9)
    }

    @Test("other sizes are scaled by vCPU and marked as estimates; the cheapest meeting the objective is named")
    func sizes() throws {
        let advisor = Advisor(catalog: try Self.catalog(), policy: ScalingPolicy(objective: WaitObjective(target: 0.1)))
        let advice = try advisor.advise(PoolObservation(pool: "cpu", arrivalRate: 10, serviceTime: 0.47), measuredOn: "c5.xlarge")
        #expect(advice.alternatives.map(\.instanceType) == ["c5.large", "c5.xlarge", "c5.2xlarge", "c5.4xlarge", "c5.9xlarge"])
        let large = advice.alternatives[0]
        #expect(large.estimated && abs(large.serviceTime - 0.94) < 1e-9)
        #expect(!advice.alternatives[1].estimated && advice.alternatives[1].instances == 7)
        let cheapest = advice.alternatives.filter(\.meetsObjective).min { $0.poolPerHour < $1.poolPerHour }
        #expect(advice.cheapest == cheapest)
        #expect(throws: AdvisorError.self) { try advisor.advise(PoolObservation(pool: "cpu", arrivalRate: 1, serviceTime: 1), measuredOn: "m5.large") }
        // Ten hosts running now at 10/s × 0.47 s are 47% busy: $22.19 per million at saturation becomes $47.2.
        let running = try advisor.advise(PoolObservation(pool: "cpu", arrivalRate: 10, serviceTime: 0.47, currentInstances: 10), measuredOn: "c5.xlarge")
        #expect(abs((running.currentCost?.utilisation ?? 0) - 0.47) < 1e-9 && abs((running.currentCost?.perMillionAtUtilisation ?? 0) - 47.22) < 0.01)
        #expect(advice.currentCost == nil, "no hosts now, no current cost")
    }

    @Test("kiroku advise what-if: 10 images/s at 0.47 s, 100 ms mean wait, c5.xlarge: 7 instances")
    func whatIfCommand() async throws {
        let run = try await KirokuProcess.run(["advise", "--arrival-rate", "10", "--service-time", "0.47", "--wait-target", "100ms",
                                         "--instance-type", "c5.xlarge", "--json", "--catalog", Self.root.appendingPathComponent("catalog/instances.json").path])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["recommended_instances"] as? Int == 7)
        let text = try await KirokuProcess.run(["advise", "--arrival-rate", "10", "--service-time", "0.47", "--wait-target", "100ms",
                                          "--catalog", Self.root.appendingPathComponent("catalog/instances.json").path])
        #expect(text.stdout.contains("erlang_c              7") && text.stdout.contains("6 give a mean wait of 175 ms"), "\(text.stdout)")
        let unknown = try await KirokuProcess.run(["advise", "--arrival-rate", "10", "--service-time", "0.47", "--instance-type", "c9.huge",
                                             "--catalog", Self.root.appendingPathComponent("catalog/instances.json").path])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown instance type 'c9.huge'; the catalog has c5.large"))
        let half = try await KirokuProcess.run(["advise", "--arrival-rate", "10"])
        #expect(half.status == 2 && half.stderr.contains("needs both --arrival-rate and --service-time"))
    }
}
