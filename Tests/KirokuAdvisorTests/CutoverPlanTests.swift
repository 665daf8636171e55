import Foundation
import KirokuAdvisor
import KirokuQueue
import KirokuTestSupport
import Testing

/// A legacy service that is not Kiroku: it speaks to the queue through the SQL functions only,
/// never registers and never reports a speed.
private struct LegacyWorker {
    let connection: PostgresConnection
    let id: String

    /// Claims up to `count` jobs of `pool`, holds them `seconds`, and completes them with a result
    /// in the contract's shape. Returns how many it finished.
    @discardableResult
    func serve(pool: String, count: Int, holding seconds: Double) throws -> Int {
        let claimed = try connection.query("SELECT job_id, lease_token FROM kiroku.claim($1, $2, $3, interval '1 minute')",
                                           [.text(id), .text(pool), .int(Int64(count))])
        let jobs = try claimed.map { row throws(PostgresError) in (try row.int("job_id"), try row.string("lease_token")) }
        Thread.sleep(forTimeInterval: seconds)
        guard !jobs.isEmpty else { return 0 }
        let result = #"{"top": [{"index": 963, "label": "pizza", "score": 0.9}], "food": true, "food_score": 0.95}"#
        let stored = try connection.query("SELECT stored FROM kiroku.complete_many($1::int8[], $2::text[], $3::jsonb[])", [
            .array(.int8, jobs.map { .int($0.0) }), .array(.text, jobs.map { .text($0.1) }), .array(.jsonb, jobs.map { _ in .text(result) }),
        ])
        return try stored.filter { row throws(PostgresError) in try row.bool("stored") }.count
    }
}

@Suite("Every pool measured, and the cut-over plan", .subprocesses)
struct CutoverPlanTests {
    static let catalog = SizingRuleTests.root.appendingPathComponent("catalog/instances.json").path

    static func enqueue(_ connection: PostgresConnection, pool: String, count: Int) throws {
        try connection.execute("""
            INSERT INTO kiroku.jobs (image_uri, pool) SELECT 'https://img.example/' || n || '.jpg', '\(pool)' FROM generate_series(1, \(count)) AS n
            """)
    }

    @Test("a pool whose workers never register nor report a speed: live workers and service time measured from its jobs")
    func legacyPoolMeasured() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        try Self.enqueue(connection, pool: "gpu", count: 40)
        let legacy = LegacyWorker(connection: connection, id: "legacy-gpu-1")
        // One job at a time, 40 ms each: the busy time per job is the hold.
        for _ in 0..<5 { #expect(try legacy.serve(pool: "gpu", count: 1, holding: 0.04) == 1) }
        // A batch of 8 held together counts once: 8 jobs in about 80 ms, 10 ms each.
        #expect(try legacy.serve(pool: "gpu", count: 8, holding: 0.08) == 8)

        let gpu = try #require(try QueueMeasurements().measure(connection).first { $0.pool == "gpu" })
        #expect(gpu.liveWorkers == 1, "an unregistered worker id seen on jobs is a live host")
        #expect(gpu.serviceTimeSource == "busy time of its jobs")
        let observation = try #require(gpu.observation, "\(gpu.notes)")
        // (5 × ~0.04 + ~0.08) / 13 jobs ≈ 0.022 s; summing each job's own claim-to-finish would give (0.2 + 0.64) / 13 ≈ 0.065.
        #expect(observation.serviceTime > 0.018 && observation.serviceTime < 0.045, "\(observation.serviceTime)")
        #expect(observation.currentInstances == 1 && observation.queued == 27)
        #expect(gpu.notes.contains { $0.contains("measured from the jobs themselves") && $0.contains("13 jobs finished by 1 worker in") }, "\(gpu.notes)")

        // The merged busy time, exactly: a worker's jobs [0, 10] and [2, 5] overlap (10 s), [20, 25] does not (5 s): 15 s over 3 jobs.
        try Self.enqueue(connection, pool: "exact", count: 3)
        try LegacyWorker(connection: connection, id: "legacy-exact").serve(pool: "exact", count: 3, holding: 0)
        try connection.execute("""
            UPDATE kiroku.jobs AS j SET started_at = now() - interval '100 seconds' + t.s * interval '1 second',
                                        finished_at = now() - interval '100 seconds' + t.f * interval '1 second'
            FROM (SELECT id, (ARRAY[0, 2, 20])[row_number() OVER (ORDER BY id)] AS s,
                             (ARRAY[10, 5, 25])[row_number() OVER (ORDER BY id)] AS f
                  FROM kiroku.jobs WHERE pool = 'exact') AS t
            WHERE j.id = t.id
            """)
        let exact = try #require(try QueueMeasurements().measure(connection).first { $0.pool == "exact" })
        #expect(abs((exact.observation?.serviceTime ?? 0) - 5) < 1e-6, "\(exact.notes)")

        // The advisor sizes it and the autoscaler's advice includes it, beside a Kiroku pool.
        let run = try await KirokuProcess.run(["advise", "--json", "--catalog", Self.catalog], databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        let advice = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let pools = (advice["pools"] as? [[String: Any]] ?? []).compactMap { ($0["observation"] as? [String: Any])?["pool"] as? String }
        #expect(pools.contains("gpu"), "\(run.stdout)")

        // The autoscaler publishes a recommendation for it too, on the type its workers registered
        // (a GPU type stays one whatever CPU type --instance-type names).
        try connection.query("SELECT kiroku.register_worker('legacy-gpu-1', 'h', 'gpu', 'default', 4, 'legacy')")
        try connection.query("SELECT kiroku.report_worker_speed('legacy-gpu-1', 'g4dn.xlarge', NULL)")
        let autoscaler = try ChildProcess(["autoscaler", "--interval", "200ms", "--http-port", "0", "--instance-type", "c5.2xlarge",
                                           "--catalog", Self.catalog], databaseURL: url)
        var types: [String] = []
        for _ in 0..<100 where types.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            types = try connection.query("SELECT instance_type FROM kiroku.recommendations WHERE pool = 'gpu'").map { row throws(PostgresError) in
                try row.string("instance_type")
            }
        }
        autoscaler.signal(SIGTERM)
        _ = await autoscaler.wait()
        #expect(types.first == "g4dn.xlarge", "\(types)")
        let exactType = try connection.query("SELECT instance_type FROM kiroku.recommendations WHERE pool = 'exact' LIMIT 1").single("exact")
        #expect(try exactType.string("instance_type") == "c5.2xlarge")
    }

    @Test("the plan: hosts per step equal the what-if sizing of the same rates and speeds; cost from the catalog's prices; the next route command")
    func plan() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let queue = JobQueue(connection: connection)
        try queue.setRoutes([(pool: "cpu", weight: 25), (pool: "gpu", weight: 75)])
        try Self.enqueue(connection, pool: "gpu", count: 90)
        try Self.enqueue(connection, pool: "cpu", count: 30)
        // The legacy pool: an unregistered SQL worker whose type is given on the command line.
        let legacy = LegacyWorker(connection: connection, id: "legacy-gpu-1")
        for _ in 0..<4 { try legacy.serve(pool: "gpu", count: 1, holding: 0.02) }
        // The new pool: a Kiroku-style worker that reported its speed and type.
        try queue.registerWorker(id: "kiroku-1", host: "h", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 4, version: "t")
        try queue.reportWorkerSpeed(id: "kiroku-1", instanceType: "c5.xlarge", imagesPerSecond: 2.5)

        let run = try await KirokuProcess.run(["advise", "--plan", "--json", "--from", "gpu", "--from-type", "g4dn.xlarge", "--wait-target", "1s",
                                         "--catalog", Self.catalog], databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect((plan["to_measure"] as? [Any])?.isEmpty == true, "\(run.stdout)")
        let steps = plan["steps"] as? [[String: Any]] ?? []
        #expect(steps.map { $0["percent"] as? Int } == [0, 10, 25, 50, 100])
        let speeds = plan["speeds"] as? [[String: Any]] ?? []
        let serviceTimes = speeds.map { $0["service_time"] as? Double ?? 0 }
        #expect(abs(serviceTimes[1] - 0.4) < 1e-9 && serviceTimes[0] > 0.015, "\(speeds)")
        let types = ["g4dn.xlarge", "c5.xlarge"]

        let prices = try Self.onDemandPrices()
        for step in steps {
            let pools = step["pools"] as? [[String: Any]] ?? []
            var perHour = 0.0
            for (index, pool) in pools.enumerated() {
                let rate = pool["arrival_rate"] as? Double ?? -1, hosts = pool["instances"] as? Int ?? -1
                perHour += Double(hosts) * prices[types[index]]!
                guard rate > 0 else {
                    #expect(hosts == 0, "a pool serving nothing runs no host")
                    continue
                }
                let whatIf = try await KirokuProcess.run(["advise", "--json", "--arrival-rate", "\(rate)", "--service-time", "\(serviceTimes[index])",
                                                    "--instance-type", types[index], "--wait-target", "1s", "--catalog", Self.catalog])
                let advice = try #require(try JSONSerialization.jsonObject(with: Data(whatIf.stdout.utf8)) as? [String: Any], "\(whatIf.stderr)")
                #expect(advice["recommended_instances"] as? Int == hosts, "step \(step["percent"] ?? "?") pool \(index)")
            }
            #expect(abs((step["per_hour"] as? Double ?? 0) - perHour) < 1e-9)
        }
        let start = steps.first?["per_hour"] as? Double ?? 0, end = steps.last?["per_hour"] as? Double ?? 0
        #expect(abs((plan["end_over_start"] as? Double ?? 0) - end / start) < 1e-9)
        #expect(plan["current_percent"] as? Double == 25)
        #expect(plan["next_command"] as? String == "kiroku route set cpu=50 gpu=50")
        #expect(plan["next_step_allowed"] as? Bool == false, "no shadow comparison has been made")

        let text = try await KirokuProcess.run(["advise", "--plan", "--from", "gpu", "--from-type", "g4dn.xlarge", "--catalog", Self.catalog], databaseURL: url)
        #expect(text.status == 0 && text.stdout.contains("Cut-over plan: gpu -> cpu") && text.stdout.contains("busy time of its jobs")
                && text.stdout.contains("kiroku route set cpu=50 gpu=50"), "\(text.stdout)")
    }

    @Test("a pool of unknown speed or type is not guessed: the plan says what to run")
    func unknownSpeed() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        try Self.enqueue(connection, pool: "gpu", count: 10)
        try Self.enqueue(connection, pool: "cpu", count: 10)
        let run = try await KirokuProcess.run(["advise", "--plan", "--json", "--catalog", Self.catalog], databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(plan["from"] as? String == "gpu", "the other pool with arrivals")
        let missing = plan["to_measure"] as? [String] ?? []
        #expect(missing.contains { $0.contains("pool gpu's instance type is unknown") && $0.contains("kiroku.report_worker_speed") }, "\(missing)")
        #expect(missing.contains { $0.contains("pool gpu has no measured speed") }, "\(missing)")
        #expect(missing.contains { $0.contains("pool cpu has no measured speed") && $0.contains("kiroku worker --pool cpu") }, "\(missing)")
        #expect((plan["steps"] as? [Any])?.isEmpty == true)
        let bad = try await KirokuProcess.run(["advise", "--plan", "--steps", "50,25", "--catalog", Self.catalog], databaseURL: url)
        #expect(bad.status != 0 && bad.stderr.contains("the steps must rise"), "\(bad.stderr)")
    }

    static func onDemandPrices() throws -> [String: Double] {
        let data = try Data(contentsOf: URL(fileURLWithPath: catalog))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let region = json["default_region"] as? String ?? ""
        var prices: [String: Double] = [:]
        for instance in json["instances"] as? [[String: Any]] ?? [] {
            let price = ((instance["prices"] as? [String: Any])?[region] as? [String: Any])?["on_demand"] as? Double
            prices[instance["type"] as? String ?? ""] = price
        }
        return prices
    }
}
