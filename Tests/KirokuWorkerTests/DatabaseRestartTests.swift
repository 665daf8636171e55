import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku worker: the database restarts", .subprocesses)
struct DatabaseRestartTests {
    @Test("the server stops and starts again while a worker runs: the worker reconnects and finishes the queue, each job once")
    func restart() async throws {
        let server = try PostgresServer()
        try MigrationRunner(logger: TestDatabase.quietLogger).migrate(try PostgresConnection(server.url))
        var connection = try PostgresConnection(server.url)
        try WorkerFixtures.auditSuccesses(connection)
        let jobs = try WorkerFixtures.enqueuePhotos(200, into: JobQueue(connection: connection))

        let worker = try ChildProcess(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--max-batch", "4"]),
                                       databaseURL: server.url)
        let working = try await WorkerFixtures.eventually(timeout: .seconds(120)) { try WorkerFixtures.states(connection)["succeeded", default: 0] > 0 }
        #expect(working, "\(worker.stderr)")
        try server.stop()
        try await Task.sleep(for: .seconds(2))
        try server.start()

        connection = try PostgresConnection(server.url)
        let finished = try await WorkerFixtures.eventually { try WorkerFixtures.states(connection)["succeeded"] == jobs.count }
        worker.signal(SIGTERM)
        let exit = await worker.wait()
        #expect(finished, "\(exit.stderr)")
        #expect(exit.status == 0, "\(exit.stderr)")
        #expect(exit.stderr.contains("database connection lost"))
        #expect(exit.stderr.contains("database connection restored"))
        let audit = try connection.query("SELECT count(*) AS writes, count(DISTINCT job_id) AS jobs FROM public.kiroku_test_successes").single("audit")
        #expect(try audit.int("writes") == Int64(jobs.count) && audit.int("jobs") == Int64(jobs.count))
    }
}
