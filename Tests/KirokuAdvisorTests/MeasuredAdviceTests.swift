import Foundation
import KirokuAdvisor
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku advise from a real database", .subprocesses)
struct MeasuredAdviceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("after a worker run: its measured speed and instance type size the pool; a pool without measurements is named, not sized")
    func measured() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let photos = Self.root.appendingPathComponent(".kiroku/vision-fixtures/photos").path
        let catalog = Self.root.appendingPathComponent("catalog/instances.json").path
        let model = Self.root.appendingPathComponent("models/efficientnet-lite0.onnx").path
        for _ in 0..<2 {
            #expect(try await KirokuProcess.run(["enqueue", "--no-idempotency-key", photos], databaseURL: url).status == 0)
        }
        let lock = TestScratch.path("advise", suffix: ".lock")
        let worker = try await KirokuProcess.run(["worker", "--once", "--http-port", "0", "--lock-file", lock, "--model", model,
                                            "--instance-type", "c5.large"], databaseURL: url)
        #expect(worker.status == 0, "\(worker.stderr)")
        #expect(try await KirokuProcess.run(["enqueue", "--no-idempotency-key", "--pool", "gpu", photos], databaseURL: url).status == 0)

        let speed = try connection.query("SELECT instance_type, images_per_second FROM kiroku.workers").single("worker")
        #expect(try speed.optionalString("instance_type") == "c5.large")
        let rate = try #require(try speed.optionalDouble("images_per_second"))
        #expect(rate > 0)

        let run = try await KirokuProcess.run(["advise", "--json", "--wait-target", "200ms", "--catalog", catalog], databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        let advice = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(advice["mode"] as? String == "measured")
        let pools = advice["pools"] as? [[String: Any]] ?? []
        #expect(pools.count == 1)
        let cpu = pools.first ?? [:]
        #expect(cpu["instance_type"] as? String == "c5.large" && cpu["service_time_estimated"] as? Bool == false)
        let observation = cpu["observation"] as? [String: Any] ?? [:]
        #expect(observation["pool"] as? String == "cpu")
        #expect(abs((observation["service_time"] as? Double ?? 0) - 1 / rate) < 1e-9)
        #expect(observation["current_instances"] as? Int == 0, "the --once worker has stopped")
        #expect((observation["arrival_rate"] as? Double ?? 0) > 0)
        #expect(advice["recommended_instances"] as? Int == (cpu["sizing"] as? [String: Any])?["recommended"] as? Int)
        let notes = advice["notes"] as? [String] ?? []
        #expect(notes.contains { $0.hasPrefix("pool gpu:") && $0.contains("no service time measured") }, "\(notes)")

        let text = try await KirokuProcess.run(["advise", "--catalog", catalog], databaseURL: url)
        #expect(text.status == 0 && text.stdout.contains("Pool cpu:") && text.stdout.contains("erlang_c"), "\(text.stdout)")
    }
}

@Suite("Scheduled jobs in the advisor's measurements")
struct ScheduledMeasurementTests {
    @Test("arrivals count when jobs come due; scheduled jobs are not backlog but known future load, sized a start-up lag ahead")
    func scheduledLoad() throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        try queue.registerWorker(id: "w", host: "h", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 4, version: "t")
        try queue.reportWorkerSpeed(id: "w", instanceType: "c5.xlarge", imagesPerSecond: 2)
        func insert(_ count: Int, runAfter: String) throws {
            try queue.connection.execute("""
                INSERT INTO kiroku.jobs (image_uri, run_after)
                SELECT 'https://x/' || n || '.jpg', \(runAfter) FROM generate_series(1, \(count)) AS n
                """)
        }
        try insert(60, runAfter: "now()")                                  // arriving now, unscheduled
        try insert(600, runAfter: "now() + interval '90 seconds'")         // due in minute 1
        try insert(5000, runAfter: "now() + interval '3 hours'")           // beyond the two-hour horizon
        try insert(300, runAfter: "now() + interval '1 day'")              // enqueued ahead, came due 30 s ago
        try queue.connection.execute("""
            UPDATE kiroku.jobs SET enqueued_at = now() - interval '2 hours', due_at = now() - interval '30 seconds',
                                   run_after = now() - interval '30 seconds'
            WHERE run_after > now() + interval '12 hours'
            """)
        #expect(try queue.promoteDue() == 300)

        let pool = try #require(try QueueMeasurements().measure(queue.connection).first { $0.pool == "cpu" })
        // 60 + 300 came due within the last minute; the 300 do not count when they were enqueued.
        #expect(abs(pool.arrivalRateShort - 6) < 1e-9, "\(pool.arrivalRateShort)")
        let observation = try #require(pool.observation)
        #expect(observation.queued == 360 && observation.backlog == 360, "scheduled jobs are not backlog: \(observation.queued)")
        let scheduled = try #require(observation.scheduled)
        #expect(scheduled.total == 600 && scheduled.perMinute[1] == 600)
        #expect(abs(scheduled.unscheduledArrivalRate - 1) < 1e-9, "\(scheduled.unscheduledArrivalRate)")

        var policy = ScalingPolicy(objective: WaitObjective(target: 0.5))
        policy.startupLag = 120
        let sized = CapacityPlanner.size(observation, policy: policy)
        let term = try #require(sized.terms.first { $0.rule == "scheduled" })
        // 1/s unscheduled + 600 in one minute (10/s) at 0.5 s per image: as a stream Erlang C at 11/s,
        // as a backlog ⌈0.5 + 600 × 0.5 / 300⌉ = 2 hosts (the default 300 s drain target); the fewer.
        #expect(ErlangC.servers(arrivalRate: 11, serviceTime: 0.5, meeting: policy.objective) > 2)
        #expect(term.instances == 2, "\(term)")
        #expect(term.working.contains("600 jobs come due in minute 1"), "\(term.working)")
        // With a start-up lag shorter than a minute, minute 1 is not yet the advisor's concern.
        policy.startupLag = 30
        #expect(CapacityPlanner.size(observation, policy: policy).terms.first { $0.rule == "scheduled" }?.instances == 0)
    }

    @Test("a lump of jobs all due at once is sized as a backlog to drain, not as a rate served within its minute")
    func lump() throws {
        var policy = ScalingPolicy(objective: WaitObjective(target: 0.5))
        policy.startupLag = 120
        policy.drainTarget = 300
        // 18,000 jobs all due in minute 1: as a rate, 300/s would ask for about 150 hosts at 0.47 s.
        var perMinute = Array(repeating: 0, count: 120)
        perMinute[1] = 18_000
        let lump = try #require(CapacityPlanner.scheduledTerm(ScheduledArrivals(perMinute: perMinute, unscheduledArrivalRate: 4),
                                                               policy: policy, serviceTime: 0.47))
        // 4/s × 0.47 s busy hosts plus 18,000 × 0.47 s within 300 s: ⌈1.88 + 28.2⌉ = 31.
        #expect(lump.instances == 31, "\(lump.working)")
        // The same jobs spread over 15 minutes (20/s) are a stream: Erlang C at 24/s.
        perMinute = Array(repeating: 0, count: 120)
        for minute in 1...15 { perMinute[minute] = 1200 }
        let stream = try #require(CapacityPlanner.scheduledTerm(ScheduledArrivals(perMinute: perMinute, unscheduledArrivalRate: 4),
                                                                 policy: policy, serviceTime: 0.47))
        #expect(stream.instances == ErlangC.servers(arrivalRate: 24, serviceTime: 0.47, meeting: policy.objective), "\(stream.working)")
    }
}
