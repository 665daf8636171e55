import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

/// Jobs whose run_after lies ahead wait as 'scheduled', outside the claim's way, until a
/// promotion moves them to the queue once due.
@Suite("Scheduled jobs", .subprocesses)
struct ScheduledJobsTests {
    let lease = Duration.seconds(30)

    func states(_ queue: JobQueue) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try queue.connection.query("SELECT state, count(*) AS n FROM kiroku.jobs GROUP BY state") {
            counts[try row.string("state")] = Int(try row.int("n"))
        }
        return counts
    }

    @Test("scheduled jobs are not claimed before they are due, and are claimed in priority order after")
    func notBeforeDueThenInOrder() throws {
        let queue = try TestDatabase.queue()
        let later = Date().addingTimeInterval(3600)
        let scheduled = try queue.enqueue(batch: [0, 9, 5].map { (p: Int) in NewJob(image: .inline(fakeJPEG("s\(p)")), priority: p, runAfter: later) }).map(\.id)
        let now = try queue.enqueue(NewJob(image: .inline(fakeJPEG("now")), priority: 1))
        #expect(try states(queue) == ["scheduled": 3, "queued": 1])
        // The top-priority scheduled jobs are not in the claim's way, and are not promoted early.
        #expect(try queue.promoteDue() == 0)
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 10, lease: lease).map(\.id) == [now])
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 10, lease: lease).isEmpty)
        // Time passes: they come due, are promoted, and the claim takes them by priority, then age.
        try queue.connection.execute("UPDATE kiroku.jobs SET run_after = now() - interval '1 s' WHERE state = 'scheduled'")
        #expect(try states(queue)["scheduled"] == 3, "a scheduled job waits for the promotion, not for the claim")
        #expect(try queue.promoteDue() == 3)
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 10, lease: lease).map(\.id) == [scheduled[1], scheduled[2], scheduled[0]])
    }

    @Test("a plain INSERT with a later run_after is scheduled, its due time recorded; an earlier one is queued")
    func plainInsert() throws {
        let url = try TestDatabase.create()
        let producer = try TestDatabase.login(in: ["kiroku_producer"], database: url).connection
        try producer.execute("""
            INSERT INTO kiroku.jobs (image_uri, run_after) VALUES ('https://x/later.jpg', now() + interval '2 hours'),
                                                                  ('https://x/past.jpg', now() - interval '1 day')
            """)
        let rows = try producer.query("""
            SELECT image_uri::text AS uri, state, extract(epoch FROM due_at - enqueued_at)::float8 AS ahead FROM kiroku.jobs ORDER BY id
            """).rows
        #expect(try rows.map { try $0.string("state") } == ["scheduled", "queued"])
        #expect(try abs(rows[0].double("ahead") - 7200) < 1 && rows[1].double("ahead") == 0)
    }

    @Test("a retry in backoff is scheduled; cancel, idempotency keys and queue_depth count scheduled jobs")
    func retryCancelKeysDepth() async throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(NewJob(image: .inline(fakeJPEG("retry"))))
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: lease)
        #expect(try queue.fail(claimed[0].lease, error: "fetch timeout", retryable: true) == .scheduled)
        // The key of a scheduled job is held: the same request returns the same job.
        let keyed = NewJob(image: .uri("https://x/k.jpg"), idempotencyKey: "nightly-1", runAfter: Date().addingTimeInterval(600))
        let first = try queue.enqueue(keyed), again = try queue.enqueue(keyed)
        #expect(first == again)
        let depth = try queue.connection.query("""
            SELECT queued, ready, scheduled, running, extract(epoch FROM next_due_at - now())::float8 AS next_due, due_within_hour
            FROM kiroku.queue_depth WHERE pool = 'cpu'
            """).single("depth")
        #expect(try depth.int("queued") == 2 && depth.int("ready") == 0 && depth.int("scheduled") == 2 && depth.int("running") == 0)
        #expect(try depth.double("next_due") > 0 && depth.double("next_due") < 3 && depth.int("due_within_hour") == 2)
        // kiroku status shows them apart, with when the next comes due.
        let url = try TestDatabase.url(database: try queue.connection.query("SELECT current_database() AS d").single("db").string("d"))
        let status = try await KirokuProcess.run(["status", "--json"], databaseURL: url)
        let report = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let pool = (report?["pools"] as? [[String: Any]])?.first
        #expect(pool?["scheduled"] as? Int == 2 && pool?["ready"] as? Int == 0 && pool?["queued"] as? Int == 2, "\(status.stdout)")
        #expect(pool?["next_due_at"] as? String != nil && pool?["due_within_hour"] as? Int == 2)
        #expect(try await KirokuProcess.run(["status"], databaseURL: url).stdout.contains("SCHEDULED"))
        #expect(try queue.cancel(jobID: first))
        #expect(try states(queue) == ["scheduled": 1, "cancelled": 1])
    }

    @Test("promotion goes in batches, earliest first, and promoters running at once share the work without overlap")
    func concurrentPromotion() async throws {
        let queue = try TestDatabase.queue()
        let url = try TestDatabase.url(database: try queue.connection.query("SELECT current_database() AS d").single("db").string("d"))
        try queue.connection.execute("""
            INSERT INTO kiroku.jobs (image_uri, run_after)
            SELECT 'https://x/' || n || '.jpg', now() + make_interval(secs => 3600 + n / 10.0) FROM generate_series(1, 5000) AS n
            """)
        try queue.connection.execute("UPDATE kiroku.jobs SET run_after = run_after - interval '2 hours'")
        #expect(try queue.promoteDue(maxJobs: 10) == 10)
        let earliest = try queue.connection.query("SELECT count(*) AS n FROM kiroku.jobs WHERE state = 'queued' AND image_uri::text ~ '^https://x/([1-9]|10)\\.jpg$'")
        #expect(try earliest.single("n").int("n") == 10)
        let promoted = try await onThreads(4) { _ in
            let promoter = JobQueue(connection: try PostgresConnection(url))
            var total = 0
            while true {
                let moved = try promoter.promoteDue(maxJobs: 100)
                total += moved
                if moved == 0 { return total }
            }
        }
        #expect(promoted.reduce(0, +) == 4990)
        #expect(try states(queue) == ["queued": 5000])
        // A worker login may promote; a producer may not.
        let worker = JobQueue(connection: try TestDatabase.login(in: ["kiroku_worker"], database: url).connection)
        #expect(try worker.promoteDue() == 0)
        let producer = JobQueue(connection: try TestDatabase.login(in: ["kiroku_producer"], database: url).connection)
        let refused = #expect(throws: PostgresError.self) { try producer.promoteDue() }
        #expect(refused?.sqlState == "42501")
        #expect(throws: PostgresError.self) { try worker.promoteDue(maxJobs: 0) }
    }
}
