import Foundation
import KirokuQueue
import KirokuSupport
import KirokuTestSupport
import Testing

/// The queue protocol through the SQL functions, via the Swift client.
@Suite("Queue protocol")
struct ProtocolTests {
    let lease = Duration.seconds(30)

    func currentDatabase(_ queue: JobQueue) throws -> String {
        try queue.connection.query("SELECT current_database() AS name").single("database").string("name")
    }

    func state(_ queue: JobQueue, _ id: Int64) throws -> PostgresRow {
        try queue.connection.query("""
            SELECT state, attempt, worker_id, error, error_kind, result::text AS result, timings::text AS timings,
                   extract(epoch FROM run_after - now())::float8 AS run_after_in,
                   lease_expires_at, finished_at
            FROM kiroku.jobs WHERE id = $1
            """, [.int(id)]).single("job \(id)")
    }

    @Test("enqueue, claim, complete: the result is stored and the image comes back intact")
    func happyPath() throws {
        let queue = try TestDatabase.queue()
        let image = fakeJPEG("happy") + (0..<1000).map { UInt8($0 % 256) }
        let id = try queue.enqueue(NewJob(image: .inline(image), model: "effnet"))
        let claimed = try queue.claim(workerID: "w1", pool: "cpu", maxJobs: 10, lease: lease)
        #expect(claimed.count == 1)
        #expect(claimed[0].id == id && claimed[0].attempt == 1 && claimed[0].model == "effnet")
        #expect(claimed[0].image == image && claimed[0].imageURI == nil)
        #expect(try state(queue, id).string("state") == "running")

        #expect(claimed[0].lease.token.count == 64, "a 256-bit token in hex")
        let stored = try queue.complete(claimed[0].lease, resultJSON: #"{"label": "pizza", "timings": {"decode_ms": 3.5}}"#)
        #expect(stored)
        let row = try state(queue, id)
        #expect(try row.string("state") == "succeeded")
        #expect(try row.string("result").contains("pizza"))
        #expect(try row.string("timings") == #"{"decode_ms": 3.5}"#)
        #expect(try row.isNull("lease_expires_at"))
        #expect(try queue.claim(workerID: "w1", pool: "cpu", maxJobs: 10, lease: lease).isEmpty)
        // The content hash is SHA-256 of the bytes, as PostgreSQL computes it.
        let hash = try queue.connection.query("SELECT encode(content_hash, 'hex') AS h FROM kiroku.jobs WHERE id = $1", [.int(id)])
        #expect(try hash.single("hash").string("h") == SHA256.hex(image))
    }

    @Test("claims go highest priority first, then oldest; pools are separate; run_after is honoured")
    func ordering() throws {
        let queue = try TestDatabase.queue()
        let low = try queue.enqueue(NewJob(image: .inline(fakeJPEG("a")), priority: 0))
        let high = try queue.enqueue(NewJob(image: .inline(fakeJPEG("b")), priority: 5))
        let low2 = try queue.enqueue(NewJob(image: .inline(fakeJPEG("c")), priority: 0))
        let gpu = try queue.enqueue(NewJob(image: .uri("https://example.com/x.jpg"), pool: "gpu"))
        _ = try queue.enqueue(NewJob(image: .inline(fakeJPEG("later")), runAfter: Date().addingTimeInterval(3600)))

        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 10, lease: lease)
        #expect(claimed.map(\.id) == [high, low, low2])
        let gpuClaim = try queue.claim(workerID: "g", pool: "gpu", maxJobs: 10, lease: lease)
        #expect(gpuClaim.map(\.id) == [gpu])
        #expect(gpuClaim[0].imageURI == "https://example.com/x.jpg" && gpuClaim[0].image == nil)
    }

    @Test("batch size limits a claim")
    func batchLimit() throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(batch: (0..<10).map { NewJob(image: .inline(fakeJPEG("\($0)"))) })
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 3, lease: lease).count == 3)
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 0, lease: lease).isEmpty)
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 100, lease: lease).count == 7)
    }

    @Test("a stale worker's complete returns false and changes nothing")
    func fencing() throws {
        let queue = try TestDatabase.queue()
        let id = try queue.enqueue(NewJob(image: .inline(fakeJPEG("fence"))))
        let first = try queue.claim(workerID: "old", pool: "cpu", maxJobs: 1, lease: .seconds(1))
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_expires_at = now() - interval '1 second'")
        #expect(try queue.rescueExpired() == 1)
        let second = try queue.claim(workerID: "new", pool: "cpu", maxJobs: 1, lease: lease)
        #expect(second.map(\.attempt) == [2])
        #expect(first[0].lease.token != second[0].lease.token)

        // The old worker wakes up: its lease is fenced out everywhere.
        #expect(try queue.complete(first[0].lease, resultJSON: #"{"stale": true}"#) == false)
        #expect(try queue.fail(first[0].lease, error: "x", retryable: false) == nil)
        #expect(try queue.heartbeat(workerID: "old", leases: [first[0].lease], lease: lease) == 0)
        #expect(try queue.release([first[0].lease]) == 0)
        var row = try state(queue, id)
        #expect(try row.string("state") == "running" && row.string("worker_id") == "new" && row.isNull("result"))

        #expect(try queue.complete(second[0].lease, resultJSON: #"{"ok": 1}"#))
        #expect(try queue.complete(second[0].lease, resultJSON: #"{"ok": 2}"#) == false)
        row = try state(queue, id)
        #expect(try row.string("result") == #"{"ok": 1}"#)
    }

    @Test("a completion of 1,000 jobs in any order stores each result on its own job and fences each lease alone")
    func largeBatchCompletion() throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(batch: (0..<1000).map { NewJob(image: .uri("https://example.com/\($0).jpg")) })
        let leases = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1000, lease: lease).map(\.lease)
        #expect(leases.count == 1000)
        // Every seventh job presents a forged token (one claim draws one token for its batch): only those are refused.
        var completions = leases.enumerated().map { index, held in
            let token = index % 7 == 3 ? String(held.token.reversed()) : held.token
            return JobCompletion(lease: JobLease(id: held.id, token: token),
                                 resultJSON: #"{"job": \#(held.id)}"#)
        }
        completions.reverse()
        let stored = try queue.complete(completions)
        #expect(stored == completions.map { completion in completion.lease.token == leases.first { $0.id == completion.lease.id }?.token })
        let rows = try queue.connection.query("""
            SELECT count(*) FILTER (WHERE state = 'succeeded' AND (result ->> 'job')::int8 = id) AS own,
                   count(*) FILTER (WHERE state = 'running' AND result IS NULL) AS refused
            FROM kiroku.jobs
            """).single("counts")
        #expect(try rows.int("own") == 857 && rows.int("refused") == 143)
    }

    @Test("heartbeats extend only the worker's own running leases")
    func heartbeat() throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(batch: (0..<3).map { NewJob(image: .inline(fakeJPEG("hb\($0)"))) })
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(1))
        try queue.registerWorker(id: "w", host: "h", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 2, version: "t")
        try queue.connection.execute("UPDATE kiroku.workers SET last_seen = now() - interval '1 hour'")
        // A job not claimed (no lease) and a forged token extend nothing.
        #expect(try queue.heartbeat(workerID: "w", leases: claimed.map(\.lease) + [JobLease(id: claimed[0].id + 100, token: "x")],
                                    lease: .seconds(600)) == 2)
        let remaining = try queue.connection.query("""
            SELECT min(extract(epoch FROM lease_expires_at - now()))::float8 AS s FROM kiroku.jobs WHERE state = 'running'
            """).single("lease").double("s")
        #expect(remaining > 500)
        let seen = try queue.connection.query("SELECT extract(epoch FROM now() - last_seen)::float8 AS s FROM kiroku.workers")
        #expect(try seen.single("seen").double("s") < 60)
    }

    @Test("retryable failures back off exponentially with jitter, then fail as exhausted")
    func retries() throws {
        let queue = try TestDatabase.queue()
        let id = try queue.enqueue(NewJob(image: .inline(fakeJPEG("retry"))))
        try queue.connection.execute("UPDATE kiroku.jobs SET max_attempts = 3")
        for attempt in 1...3 {
            let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: lease)
            #expect(claimed.map(\.attempt) == [attempt])
            let newState = try queue.fail(claimed[0].lease, error: "fetch timeout", retryable: true)
            let row = try state(queue, id)
            if attempt < 3 {
                #expect(try newState == .scheduled && row.string("state") == "scheduled")
                // 2^attempt seconds plus up to 25% jitter.
                let delay = try row.double("run_after_in")
                let base = pow(2.0, Double(attempt))
                #expect(delay > base - 1 && delay <= base * 1.25 + 0.1, "attempt \(attempt): delay \(delay)")
                #expect(try row.isNull("error_kind") && row.isNull("finished_at"))
                // Not claimable before its time, nor promoted.
                #expect(try queue.promoteDue() == 0)
                #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: lease).isEmpty)
                try queue.connection.execute("UPDATE kiroku.jobs SET run_after = now()")
                #expect(try queue.promoteDue() == 1)
            } else {
                #expect(newState == .failed)
                #expect(try row.string("error_kind") == "exhausted" && row.string("error") == "fetch timeout")
            }
        }
    }

    @Test("a permanent failure fails at once")
    func permanentFailure() throws {
        let queue = try TestDatabase.queue()
        let id = try queue.enqueue(NewJob(image: .inline(fakeJPEG("corrupt"))))
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: lease)
        #expect(try queue.fail(claimed[0].lease, error: "corrupt JPEG: bad Huffman table", retryable: false) == .failed)
        let row = try state(queue, id)
        #expect(try row.string("error_kind") == "permanent" && row.string("error").contains("Huffman"))
        #expect(try !row.isNull("finished_at"))
    }

    @Test("expired leases are rescued: back to the queue, or failed when out of attempts")
    func rescue() throws {
        let queue = try TestDatabase.queue()
        let ids = try queue.enqueue(batch: [NewJob(image: .inline(fakeJPEG("r1"))), NewJob(image: .inline(fakeJPEG("r2")))]).map(\.id)
        try queue.connection.execute("UPDATE kiroku.jobs SET max_attempts = 1 WHERE id = \(ids[1])")
        _ = try queue.claim(workerID: "crashed", pool: "cpu", maxJobs: 2, lease: .seconds(1))
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_expires_at = now() - interval '1 second'")
        #expect(try queue.rescueExpired() == 2)
        #expect(try queue.rescueExpired() == 0)
        #expect(try state(queue, ids[0]).string("state") == "queued")
        #expect(try state(queue, ids[0]).string("error").contains("lease expired"))
        let exhausted = try state(queue, ids[1])
        #expect(try exhausted.string("state") == "failed" && exhausted.string("error_kind") == "exhausted")
        // A live lease is left alone.
        _ = try queue.claim(workerID: "alive", pool: "cpu", maxJobs: 1, lease: lease)
        #expect(try queue.rescueExpired() == 0)
    }

    @Test("release hands back held jobs: queued at once, the attempt credited, the pool notified; fenced like complete")
    func release() throws {
        let queue = try TestDatabase.queue()
        let listener = JobQueue(connection: try PostgresConnection(try TestDatabase.url(database: try currentDatabase(queue))))
        _ = try listener.waitForJobs(pool: "cpu", timeout: .milliseconds(1))  // LISTEN now
        let ids = try queue.enqueue(batch: (0..<3).map { NewJob(image: .inline(fakeJPEG("rel\($0)"))) }).map(\.id)
        while try listener.waitForJobs(pool: "cpu", timeout: .milliseconds(50)) {}  // drain the enqueue's notification
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 3, lease: lease)
        #expect(claimed.count == 3)
        // A forged token, a token of the right shape that no claim drew, and an unknown job are left
        // alone (another claim's token: SecurityTests.tokenPerClaim).
        #expect(try queue.release([JobLease(id: claimed[0].id, token: "forged")]) == 0)
        let wrong = String(repeating: "0", count: claimed[0].lease.token.count)
        #expect(try queue.release([JobLease(id: claimed[0].id, token: wrong), JobLease(id: 999_999, token: claimed[0].lease.token)]) == 0)
        #expect(try queue.release([claimed[0].lease, claimed[1].lease]) == 2)
        #expect(try listener.waitForJobs(pool: "cpu", timeout: .seconds(5)))
        for id in ids.prefix(2) {
            let row = try state(queue, id)
            #expect(try row.string("state") == "queued" && row.int("attempt") == 1 && row.optionalString("worker_id") == nil)
            #expect(try row.double("run_after_in") <= 0)
        }
        #expect(try state(queue, ids[2]).string("state") == "running")
        // Released twice: the second is fenced.
        #expect(try queue.release([claimed[0].lease]) == 0)
        // Attempts only grow; the released one is credited, so max_attempts still allows as many tries.
        #expect(try queue.claim(workerID: "w2", pool: "cpu", maxJobs: 3, lease: lease).map(\.attempt) == [2, 2])
        let used = try queue.connection.query("SELECT attempt - attempt_base AS used FROM kiroku.jobs WHERE id = $1", [.int(ids[0])])
        #expect(try used.single("used").int("used") == 1)
    }

    @Test("idempotency keys: one unfinished job per key; a finished job frees the key")
    func idempotency() throws {
        let queue = try TestDatabase.queue()
        let first = try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), idempotencyKey: "k"))
        #expect(try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), idempotencyKey: "k")) == first)
        let batch = try queue.enqueue(batch: [NewJob(image: .inline(fakeJPEG("j")), idempotencyKey: "k2"),
                                              NewJob(image: .inline(fakeJPEG("j")), idempotencyKey: "k2")])
        #expect(batch[0].id == batch[1].id && batch[0].id != first)
        #expect(batch.map(\.created) == [true, false])
        let count = try queue.connection.query("SELECT count(*) AS n FROM kiroku.jobs").single("count").int("n")
        #expect(count == 2)

        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: lease)
        #expect(try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), idempotencyKey: "k")) == first, "running still holds the key")
        #expect(try queue.complete(claimed[0].lease, resultJSON: "{}"))
        let again = try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), idempotencyKey: "k"))
        #expect(again != first)
        // The finished job cannot be requeued while the new one holds its key.
        try queue.connection.execute("UPDATE kiroku.jobs SET state = 'failed', error_kind = 'permanent' WHERE id = \(first)")
        #expect(try queue.requeue(jobID: first) == false)
    }

    @Test("cancel and requeue")
    func cancelRequeue() throws {
        let queue = try TestDatabase.queue()
        let queued = try queue.enqueue(NewJob(image: .inline(fakeJPEG("q"))))
        #expect(try queue.cancel(jobID: queued))
        #expect(try queue.cancel(jobID: queued) == false)
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 5, lease: lease).isEmpty)
        #expect(try queue.requeue(jobID: queued))
        #expect(try queue.requeue(jobID: queued) == false, "a queued job is not requeued")
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 5, lease: lease)
        #expect(claimed.map(\.attempt) == [1])
        // Cancelling a running job fences its worker out.
        #expect(try queue.cancel(jobID: queued))
        #expect(try queue.complete(claimed[0].lease, resultJSON: "{}") == false)
        #expect(try state(queue, queued).string("state") == "cancelled")
        #expect(try queue.requeue(jobID: 987_654) == false)
    }

    @Test("producers in any language: the SQL functions with their documented signatures and defaults")
    func sqlProducers() throws {
        let queue = try TestDatabase.queue()
        let rows = try queue.connection.query("""
            SELECT kiroku.enqueue('\\xffd8ffe0'::bytea) AS a,
                   kiroku.enqueue('\\xffd8ffe1'::bytea, model => 'm', priority => 7, pool => 'gpu',
                                  idempotency_key => 'sql-key', run_after => now() - interval '1 s') AS b,
                   kiroku.enqueue('\\xffd8ffe1'::bytea, model => 'm', pool => 'gpu', idempotency_key => 'sql-key') AS c,
                   kiroku.enqueue_uri('https://cdn.example/p.jpg', 'default', 0, NULL, NULL, now()) AS d
            """).single("enqueue")
        #expect(try rows.int("b") == rows.int("c"))
        let jobs = try queue.connection.query("""
            SELECT id, pool, model, priority, image_inline, image_uri FROM kiroku.jobs ORDER BY id
            """)
        #expect(try jobs.rows.map { try $0.string("pool") } == ["cpu", "gpu", "cpu"])
        #expect(try jobs.rows.map { try $0.string("model") } == ["default", "m", "default"])
        #expect(try jobs.rows.map { try $0.int("priority") } == [0, 7, 0])
        #expect(try jobs.rows.map { try $0.optionalString("image_uri") } == [nil, nil, "https://cdn.example/p.jpg"])
        let claimed = try queue.claim(workerID: "g", pool: "gpu", maxJobs: 5, lease: lease)
        #expect(claimed.map(\.image) == [[0xFF, 0xD8, 0xFF, 0xE1]])
    }

    @Test("bad input is refused with a clear error")
    func badInput() throws {
        let queue = try TestDatabase.queue()
        let uriError = #expect(throws: PostgresError.self) { try queue.enqueue(NewJob(image: .uri("ftp://host/x.jpg"))) }
        #expect(uriError?.message.contains("unsupported image URI") == true)
        #expect(uriError?.sqlState == "22023")
        let emptyError = #expect(throws: PostgresError.self) { try queue.enqueue(NewJob(image: .inline([]))) }
        #expect(emptyError?.message.contains("empty") == true)
        #expect(try queue.connection.query("SELECT count(*) AS n FROM kiroku.jobs").single("count").int("n") == 0)
    }

    @Test("a plain INSERT enqueues a URI job; the views count it")
    func plainInsert() throws {
        let queue = try TestDatabase.queue()
        try queue.connection.execute("""
            INSERT INTO kiroku.jobs (image_uri, pool) VALUES ('https://a/1.jpg', 'cpu'), ('https://a/2.jpg', 'cpu'), ('file:///3.jpg', 'gpu');
            """)
        let depth = try queue.connection.query("SELECT pool, queued, running FROM kiroku.queue_depth ORDER BY pool")
        #expect(try depth.rows.map { try $0.string("pool") } == ["cpu", "gpu"])
        #expect(try depth.rows.map { try $0.int("queued") } == [2, 1])
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: lease)
        _ = try queue.complete(claimed[0].lease, resultJSON: "{}")
        let throughput = try queue.connection.query("SELECT finished, succeeded FROM kiroku.recent_throughput WHERE pool = 'cpu'")
        #expect(try throughput.single("throughput").int("succeeded") == 1)
        // A row with neither image source is refused by the schema.
        #expect(throws: PostgresError.self) { try queue.connection.execute("INSERT INTO kiroku.jobs (pool) VALUES ('cpu')") }
    }

    @Test("prune deletes old finished jobs in batches, with their images")
    func prune() throws {
        let queue = try TestDatabase.queue()
        let ids = try queue.enqueue(batch: (0..<5).map { NewJob(image: .inline(fakeJPEG("p\($0)"))) }).map(\.id)
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 4, lease: lease)
        _ = try queue.complete(claimed.map { JobCompletion(lease: $0.lease, resultJSON: "{}") })
        try queue.connection.execute("UPDATE kiroku.jobs SET finished_at = now() - interval '2 days' WHERE id <> \(ids[3]) AND finished_at IS NOT NULL")
        let first = try queue.connection.query("SELECT kiroku.prune('1 day', 2) AS n").single("prune").int("n")
        let second = try queue.connection.query("SELECT kiroku.prune('1 day', 2) AS n").single("prune").int("n")
        let third = try queue.connection.query("SELECT kiroku.prune('1 day', 2) AS n").single("prune").int("n")
        #expect([first, second, third] == [2, 1, 0])
        let left = try queue.connection.query("SELECT (SELECT count(*) FROM kiroku.jobs) AS jobs, (SELECT count(*) FROM kiroku.job_images) AS images")
            .single("left")
        #expect(try left.int("jobs") == 2 && left.int("images") == 2)
    }
}
