import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

/// `kiroku doctor`'s checks against a real PostgreSQL, each driven into failure and back.
@Suite("Queue health (kiroku doctor)", .subprocesses)
struct HealthTests {
    @Test("a session holding a REPEATABLE READ snapshot is found with its pid and age; the check passes once it ends")
    func oldSnapshot() async throws {
        let url = try TestDatabase.create()
        var thresholds = HealthThresholds()
        thresholds.oldestTransaction = .seconds(1)
        let health = QueueHealth(connection: try PostgresConnection(url), thresholds: thresholds)
        #expect(try health.oldestTransaction().verdict == .pass)

        let report = try PostgresConnection(url)
        try report.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        _ = try report.query("SELECT count(*) FROM kiroku.jobs")
        let pid = try report.query("SELECT pg_backend_pid() AS pid").single("pid").int("pid")
        try await Task.sleep(for: .milliseconds(1300))
        let found = try health.oldestTransaction()
        #expect(found.verdict == .fail)
        #expect(found.evidence.contains("pid \(pid) "), "\(found.evidence)")
        #expect(found.evidence.contains("idle in transaction"), "\(found.evidence)")
        #expect(found.fix?.contains("idle_in_transaction_session_timeout") == true)

        try report.execute("COMMIT")
        let after = try health.oldestTransaction()
        #expect(after.verdict == .pass, "\(after.evidence)")
        #expect(!after.evidence.contains("pid \(pid) "))
    }

    @Test("migrations: missing and edited ones fail, naming the file; an up-to-date schema passes")
    func migrationState() throws {
        let url = try TestDatabase.create()
        let health = QueueHealth(connection: try PostgresConnection(url))
        #expect(try health.migrations().verdict == .pass)
        let newer = Migration.bundled + [Migration(version: 9999, name: "9999_future.sql", sql: "SELECT 1")]
        let missing = try health.migrations(newer)
        #expect(missing.verdict == .fail && missing.evidence.contains("9999_future.sql") && missing.fix == "run `kiroku migrate`")
        try PostgresConnection(url).execute("UPDATE kiroku.schema_migrations SET checksum = 'edited' WHERE version = 1")
        let edited = try health.migrations()
        #expect(edited.verdict == .fail && edited.evidence.contains("0001_jobs.sql"))
        let empty = QueueHealth(connection: try PostgresConnection(try TestDatabase.create(migrated: false)))
        #expect(try empty.migrations().verdict == .fail)
    }

    @Test("a running job past its lease with nobody to rescue it fails the check until it is rescued")
    func strandedLease() throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(NewJob(image: .inline(fakeJPEG("s"))))
        let claimed = try queue.claim(workerID: "gone", pool: "cpu", maxJobs: 1, lease: .seconds(60))
        let health = QueueHealth(connection: queue.connection)
        #expect(try health.strandedLeases().verdict == .pass)
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_expires_at = now() - interval '10 minutes' WHERE id = \(claimed[0].id)")
        let stranded = try health.strandedLeases()
        #expect(stranded.verdict == .fail && stranded.evidence.hasPrefix("1 running jobs"), "\(stranded.evidence)")
        #expect(stranded.fix?.contains("no worker is running") == true)
        _ = try queue.connection.query("SELECT kiroku.rescue_expired()")
        #expect(try health.strandedLeases().verdict == .pass)
    }

    @Test("login roles of the Kiroku groups without idle_in_transaction_session_timeout are named; setting it clears the warning")
    func idleTimeout() throws {
        let url = try TestDatabase.create()
        let (name, _) = try TestDatabase.login(in: ["kiroku_worker"], database: url)
        let admin = try PostgresConnection(url)
        let health = QueueHealth(connection: admin)
        let unset = try health.idleInTransactionTimeout()
        #expect(unset.verdict == .warn && unset.evidence.contains(name), "\(unset.evidence)")
        try admin.execute("ALTER ROLE \(name) SET idle_in_transaction_session_timeout = '5min'")
        #expect(try !health.idleInTransactionTimeout().evidence.contains(name))
    }

    @Test("kiroku doctor: exit 0 on a healthy database, 1 with a stranded lease, the checks as JSON; status warns in one line; bad thresholds are usage errors")
    func doctorCommand() async throws {
        let url = try TestDatabase.create()
        let healthy = try await KirokuProcess.run(["doctor"], databaseURL: url)
        #expect(healthy.status == 0, "\(healthy.stdout) \(healthy.stderr)")
        #expect(healthy.stdout.contains("PASS  migrations: all \(Migration.bundled.count) migrations applied"))

        let queue = JobQueue(connection: try PostgresConnection(url))
        _ = try queue.enqueue(NewJob(image: .inline(fakeJPEG("d"))))
        let job = try queue.claim(workerID: "gone", pool: "cpu", maxJobs: 1, lease: .seconds(60))[0]
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_expires_at = now() - interval '1 hour' WHERE id = \(job.id)")
        let sick = try await KirokuProcess.run(["doctor", "--json"], databaseURL: url)
        #expect(sick.status == 1)
        let report = try JSONSerialization.jsonObject(with: Data(sick.stdout.utf8)) as? [String: Any]
        #expect(report?["verdict"] as? String == "fail")
        let checks = report?["checks"] as? [[String: Any]] ?? []
        #expect(checks.first { $0["name"] as? String == "stranded-leases" }?["verdict"] as? String == "fail")
        #expect(try await KirokuProcess.run(["doctor", "--lease-overrun", "2h"], databaseURL: url).status == 0)
        let status = try await KirokuProcess.run(["status"], databaseURL: url)
        #expect(status.status == 0 && status.stdout.contains("warning: stranded-leases: 1 running jobs"), "\(status.stdout)")
        #expect(status.stdout.components(separatedBy: "warning:").count == 2, "one warning line")
        _ = try queue.connection.query("SELECT kiroku.rescue_expired()")
        #expect(try await !KirokuProcess.run(["status"], databaseURL: url).stdout.contains("warning:"))
        let bad = try await KirokuProcess.run(["doctor", "--dead-tuple-share", "3"], databaseURL: url)
        #expect(bad.status == 2 && bad.stderr.contains("--dead-tuple-share must be between 0 and 1"), "\(bad.stderr)")
    }

    @Test("a worker login gets every check it may read, and a warning for the one it may not (migrations)")
    func workerRole() throws {
        let url = try TestDatabase.create()
        let (_, worker) = try TestDatabase.login(in: ["kiroku_worker"], database: url)
        let checks = try QueueHealth(connection: worker).run()
        #expect(checks.count == 6)
        let migrations = checks.first { $0.name == "migrations" }
        #expect(migrations?.verdict == .warn && migrations?.evidence.contains("permission denied") == true, "\(String(describing: migrations))")
        #expect(checks.filter { $0.name != "migrations" }.allSatisfy { $0.verdict != .fail })
    }

    @Test("every check runs on a fresh database; none fails there")
    func freshDatabase() throws {
        let checks = try QueueHealth(connection: try PostgresConnection(try TestDatabase.create())).run()
        #expect(checks.map(\.name) == ["migrations", "oldest-transaction", "dead-tuples", "runnable-index", "stranded-leases", "idle-in-transaction-timeout"])
        #expect(checks.allSatisfy { $0.verdict != .fail }, "\(checks)")
    }
}
