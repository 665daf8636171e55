import Foundation
import KirokuQueue
import KirokuTestSupport
import Logging
import Testing
@testable import KirokuWorker

/// Each maintenance duty's round, driven against a real PostgreSQL.
@Suite("The worker's maintenance duties")
struct MaintenanceTests {
    static let logger = Logger(label: "kiroku.test.maintenance")

    /// A database with `count` URI jobs in pool cpu, a link for the duty, and a direct connection.
    static func setUp(jobs count: Int) throws -> (link: DatabaseLink, queue: JobQueue) {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        for n in 0..<count { _ = try queue.enqueue(NewJob(image: .uri("https://img.example/\(n).jpg"), pool: "cpu")) }
        return (try DatabaseLink(role: "maintenance-test", connectionString: url, logger: logger), queue)
    }

    static func seconds(_ sql: String, _ queue: JobQueue) throws -> Double {
        try queue.connection.query(sql).single("value").double("value")
    }

    @Test("lease renewal extends the leases this worker holds and only those")
    func leaseRenewal() async throws {
        let (link, queue) = try Self.setUp(jobs: 3)
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(5))
        let book = LeaseBook()
        book.add(claimed)
        let renewer = LeaseRenewer(link: link, book: book, workerID: "w", lease: .seconds(600), logger: Self.logger)
        #expect(try await renewer.runOnce() == 2)
        // Measured from the claim, not from now: a loaded test run may read it long after the renewal.
        let granted = try Self.seconds("SELECT min(extract(epoch FROM lease_expires_at - started_at))::float8 AS value FROM kiroku.jobs WHERE state = 'running'", queue)
        #expect(granted >= 600, "renewed to 10 minutes after the claim, not the claim's 5 s: \(granted)")
        book.remove(claimed.map(\.id))
        #expect(try await renewer.runOnce() == 0, "nothing held, nothing renewed")
        #expect(renewer.nextDelay() == .seconds(200))
        await link.close()
    }

    @Test("rescue returns an expired lease to the queue; its interval is jittered around the setting")
    func rescue() async throws {
        let (link, queue) = try Self.setUp(jobs: 2)
        _ = try queue.claim(workerID: "gone", pool: "cpu", maxJobs: 2, lease: .seconds(1))
        let rescuer = JobRescuer(link: link, interval: .seconds(10), logger: Self.logger)
        #expect(try await rescuer.runOnce() == 0, "leases still valid")
        try await Task.sleep(for: .milliseconds(1200))
        #expect(try await rescuer.runOnce() == 2)
        #expect(try Self.seconds("SELECT count(*)::float8 AS value FROM kiroku.jobs WHERE state = 'queued'", queue) == 2)
        let delays = (0..<50).map { _ in rescuer.nextDelay() }
        #expect(delays.allSatisfy { $0 >= .seconds(5) && $0 <= .seconds(15) } && Set(delays).count > 1)
        await link.close()
    }

    @Test("promotion moves scheduled jobs that came due, and none that are not")
    func promotion() async throws {
        let (link, queue) = try Self.setUp(jobs: 0)
        try queue.connection.execute("""
            INSERT INTO kiroku.jobs (image_uri, run_after)
            SELECT 'https://img.example/' || n || '.jpg', now() + CASE WHEN n <= 3 THEN interval '1 second' ELSE interval '1 hour' END
            FROM generate_series(1, 5) AS n
            """)
        let promoter = JobPromoter(link: link, interval: .seconds(1), logger: Self.logger)
        #expect(try await promoter.runOnce() == 0)
        try await Task.sleep(for: .milliseconds(1200))
        #expect(try await promoter.runOnce() == 3)
        #expect(try Self.seconds("SELECT count(*)::float8 AS value FROM kiroku.jobs WHERE state = 'scheduled'", queue) == 2)
        await link.close()
    }

    @Test("the depth sample and the speed report reach the metrics and kiroku.workers")
    func depthAndSpeed() async throws {
        let (link, queue) = try Self.setUp(jobs: 4)
        _ = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(60))
        let metrics = WorkerMetrics()
        try await DepthSampler(link: link, pool: "cpu", interval: .seconds(1), metrics: metrics).runOnce()
        let text = String(decoding: metrics.render(), as: UTF8.self)
        #expect(text.contains(#"kiroku_queue_jobs{state="queued"} 3"#) && text.contains(#"kiroku_queue_jobs{state="running"} 1"#), "\(text)")

        try queue.registerWorker(id: "w", host: "h", pool: "cpu", model: "m", modelSHA256: String(repeating: "ab", count: 32), cores: 2, version: "t")
        let speed = SpeedMeter()
        let reporter = SpeedReporter(link: link, speed: speed, workerID: "w", interval: .seconds(1))
        #expect(try await reporter.runOnce() == 0, "nothing measured yet, nothing reported")
        speed.record(images: 10, seconds: 2)
        #expect(try await reporter.runOnce() == 1)
        #expect(try Self.seconds("SELECT images_per_second AS value FROM kiroku.workers WHERE id = 'w'", queue) == 5)
        await link.close()
    }
}

@Suite("The worker's pipeline parts")
struct PipelinePartsTests {
    @Test("BatchSizer: about the target's worth of work at the smoothed time per image, between 1 and the maximum")
    func batchSizer() {
        let sizer = BatchSizer(target: .seconds(2), maximum: 32, initialEstimate: .milliseconds(100))
        #expect(sizer.next == 20)
        for _ in 0..<50 { sizer.record(0.5) }
        #expect(sizer.next == 4, "2 s / 0.5 s")
        for _ in 0..<50 { sizer.record(5) }
        #expect(sizer.next == 1, "never below one")
        for _ in 0..<80 { sizer.record(0.001) }
        #expect(sizer.next == 32, "never above the maximum")
    }

    @Test("ResultWriter counts each outcome as the database took it: stored, failed, retried, handed back, fenced")
    func resultWriter() async throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        for n in 0..<6 { _ = try queue.enqueue(NewJob(image: .uri("https://img.example/\(n).jpg"), pool: "cpu")) }
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 6, lease: .seconds(60))
        #expect(claimed.count == 6)
        // Job 6's lease passes to another worker before the write: its result must be fenced.
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_token_hash = sha256('someone else'::bytea) WHERE id = \(claimed[5].id)")
        let book = LeaseBook()
        book.add(claimed)
        let link = try DatabaseLink(role: "writer-test", connectionString: url, logger: MaintenanceTests.logger)
        let writer = ResultWriter(link: link, book: book, metrics: WorkerMetrics(), logger: MaintenanceTests.logger)
        let result = #"{"top": [{"index": 1, "label": "x", "score": 0.9}], "food": false, "food_score": 0.1}"#
        var summary = WorkerSummary()
        try await writer.write([
            (claimed[0], .succeeded(resultJSON: result)), (claimed[1], .succeeded(resultJSON: result)),
            (claimed[2], .failed(JobFailure(reason: "not an image", retryable: false))),
            (claimed[3], .failed(JobFailure(reason: "fetch timed out", retryable: true))),
            (claimed[4], .handBack), (claimed[5], .succeeded(resultJSON: result)),
        ], into: &summary)
        #expect(summary.succeeded == 2 && summary.failed == 1 && summary.retried == 1 && summary.handedBack == 1 && summary.fenced == 1,
                "\(summary)")
        #expect(book.leases.isEmpty, "every written job leaves the book")
        let states = try queue.connection.query("SELECT state FROM kiroku.jobs ORDER BY id").map { row throws(PostgresError) in try row.string("state") }
        #expect(states == ["succeeded", "succeeded", "failed", "scheduled", "queued", "running"])
        await link.close()
    }
}
