import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku worker: crashes, shutdown, several hosts", .subprocesses)
struct CrashAndShutdownTests {
    @Test("kill -9 in the middle of a batch, then a new worker: every job succeeds exactly once")
    func killNine() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        try WorkerFixtures.auditSuccesses(connection)
        let jobs = try WorkerFixtures.enqueuePhotos(240, into: JobQueue(connection: connection))

        let first = try ChildProcess(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--max-batch", "8"]), databaseURL: url)
        // Kill it once a batch has been stored and the next one is running.
        let midBatch = try await WorkerFixtures.eventually(timeout: .seconds(120)) {
            let states = try WorkerFixtures.states(connection)
            return states["succeeded", default: 0] > 0 && states["running", default: 0] > 0
        }
        first.signal(SIGKILL)
        _ = await first.wait()
        #expect(midBatch, "the first worker never had a batch running after one was stored: \(first.stderr)")
        let afterKill = try WorkerFixtures.states(connection)
        #expect(afterKill["running", default: 0] > 0, "\(afterKill)")

        let second = try ChildProcess(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile()), databaseURL: url)
        let finished = try await WorkerFixtures.eventually { try WorkerFixtures.states(connection)["succeeded"] == jobs.count }
        second.signal(SIGTERM)
        let exit = await second.wait()
        let states = try WorkerFixtures.states(connection)
        #expect(finished, "\(states)\n\(exit.stderr)")
        #expect(exit.status == 0)

        let audit = try connection.query("SELECT count(*) AS writes, count(DISTINCT job_id) AS jobs, count(*) FILTER (WHERE attempt > 1) AS retried FROM public.kiroku_test_successes").single("audit")
        #expect(try audit.int("writes") == Int64(jobs.count))
        #expect(try audit.int("jobs") == Int64(jobs.count))
        // The killed worker's running jobs were rescued and succeeded on a later attempt.
        #expect(try audit.int("retried") >= Int64(afterKill["running", default: 0]))
    }

    @Test("SIGTERM: the worker stops claiming, finishes what is in inference, hands back the rest, exits 0")
    func sigtermDrain() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let queue = JobQueue(connection: connection)
        // 120 jobs inline and by URI, then 880 more by URI: the queue must outlast the gap between
        // the first result and the signal, which a loaded CI host stretched past 120 jobs' work.
        let photos = try WorkerFixtures.photos()
        let mixed = try WorkerFixtures.enqueuePhotos(120, into: queue)
        let byURI = try queue.enqueue(batch: (0..<880).map { try WorkerFixtures.job(photos[$0 % photos.count], inline: false) })
        let jobs = mixed.count + byURI.count
        let worker = try ChildProcess(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--max-batch", "16", "--batch-target", "10s"]),
                                       databaseURL: url)
        let working = try await WorkerFixtures.eventually(timeout: .seconds(120)) { try WorkerFixtures.states(connection)["succeeded", default: 0] > 0 }
        #expect(working, "\(worker.stderr)")
        let started = ContinuousClock.now
        worker.signal(SIGTERM)
        let exit = await worker.wait(timeout: .seconds(60))
        #expect(exit.status == 0, "\(exit.stderr)")
        #expect(started.duration(to: .now) < .seconds(30))
        #expect(exit.stderr.contains("stopping"))

        let states = try WorkerFixtures.states(connection)
        #expect(states["running"] == nil && states["failed"] == nil, "\(states)")
        #expect(states["succeeded", default: 0] + states["queued", default: 0] == jobs)
        #expect(states["queued", default: 0] > 0, "a \(jobs)-job queue drained before SIGTERM: \(states)")
        // Handed back, not failed: the attempt the claim took is credited (attempts only grow), and it is runnable now.
        let handedBack = try connection.query("""
            SELECT count(*) FILTER (WHERE attempt - attempt_base = 0 AND worker_id IS NULL AND run_after <= now()) AS clean,
                   count(*) AS all
            FROM kiroku.jobs WHERE state = 'queued'
            """
        ).single("queued")
        #expect(try handedBack.int("clean") == handedBack.int("all"))
        let worker2 = try connection.query("SELECT stopped_at IS NOT NULL AS stopped FROM kiroku.workers").single("worker")
        #expect(try worker2.bool("stopped"))
    }

    @Test("a second worker on the same host is refused; workers with their own host locks share one queue without doing a job twice")
    func hostLock() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        try WorkerFixtures.auditSuccesses(connection)

        let lockA = WorkerFixtures.lockFile()
        let a = try ChildProcess(WorkerFixtures.workerArguments(lock: lockA), databaseURL: url)
        #expect(await a.waitForLog("worker ready"), "\(a.stderr)")
        let refused = try await KirokuProcess.run(WorkerFixtures.workerArguments(lock: lockA, extra: ["--once"]), databaseURL: url)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("another kiroku worker (pid \(a.pid)) already runs on this host"), "\(refused.stderr)")

        let b = try ChildProcess(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile()), databaseURL: url)
        #expect(await b.waitForLog("worker ready"), "\(b.stderr)")
        // Both idle and listening: the enqueue's notification wakes both.
        let jobs = try WorkerFixtures.enqueuePhotos(60, into: JobQueue(connection: connection))
        let finished = try await WorkerFixtures.eventually { try WorkerFixtures.states(connection)["succeeded"] == jobs.count }
        a.signal(SIGTERM)
        b.signal(SIGTERM)
        #expect(await a.wait().status == 0)
        #expect(await b.wait().status == 0)
        #expect(finished)
        let audit = try connection.query("SELECT count(*) AS writes, count(DISTINCT job_id) AS jobs, count(DISTINCT worker_id) AS workers FROM public.kiroku_test_successes").single("audit")
        #expect(try audit.int("writes") == Int64(jobs.count) && audit.int("jobs") == Int64(jobs.count))
        #expect(try audit.int("workers") == 2, "both workers should have taken a share")
    }
}
