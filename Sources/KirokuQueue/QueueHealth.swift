import Foundation
import KirokuSupport

/// One finding of `kiroku doctor`: what was checked, the verdict, the evidence, and the fix.
public struct HealthCheck: Sendable, Codable, Equatable {
    /// A check's outcome; `fail` makes `kiroku doctor` exit 1.
    public enum Verdict: String, Sendable, Codable, Comparable {
        case pass, warn, fail

        /// pass < warn < fail.
        public static func < (lhs: Verdict, rhs: Verdict) -> Bool { lhs.rank < rhs.rank }

        private var rank: Int {
            switch self {
            case .pass: 0
            case .warn: 1
            case .fail: 2
            }
        }
    }

    /// A stable name, e.g. `oldest-transaction`.
    public var name: String
    /// The outcome.
    public var verdict: Verdict
    /// What was found, with the numbers.
    public var evidence: String
    /// What to do about it (nil when the check passed).
    public var fix: String?

    /// A finding.
    public init(name: String, verdict: Verdict, evidence: String, fix: String?) {
        (self.name, self.verdict, self.evidence, self.fix) = (name, verdict, evidence, fix)
    }
}

/// The limits `kiroku doctor` judges by.
public struct HealthThresholds: Sendable {
    /// A transaction or snapshot older than this holds back cleanup of the queue's dead rows.
    public var oldestTransaction: Duration = .seconds(300)
    /// Dead rows as a share of a queue table's rows above which autovacuum is falling behind.
    public var deadTupleShare = 0.2
    /// Dead rows below this count are never a finding, whatever their share.
    public var deadTupleMinimum: Int64 = 10_000
    /// The runnable index's size over what its live entries need (about 40 bytes each).
    public var runnableIndexBloat = 10.0
    /// How long past its lease a running job may stay before it counts as stranded.
    public var leaseOverrun: Duration = .seconds(120)

    /// The defaults.
    public init() {}
}

/// The numbers behind the checks that alerts watch (the autoscaler's /metrics).
public struct HealthGauges: Sendable, Equatable {
    /// Age of the oldest transaction or prepared transaction holding a snapshot in this database, in seconds (0 when none).
    public var oldestTransactionSeconds: Double
    /// Dead rows per queue table (jobs, job_images).
    public var deadTuples: [String: Int64]
    /// Live rows per queue table, beside which the dead ones are a share.
    public var liveTuples: [String: Int64]
}

/// The health checks behind `kiroku doctor`, read from PostgreSQL's statistics and Kiroku's tables.
/// The session-level facts (other sessions' transactions) need `pg_read_all_stats` (or `pg_monitor`)
/// to see other roles' sessions; without it they are reported from what the role can see.
public struct QueueHealth {
    let connection: PostgresConnection
    let thresholds: HealthThresholds

    /// Creates the checks for one connection.
    public init(connection: PostgresConnection, thresholds: HealthThresholds = HealthThresholds()) {
        self.connection = connection
        self.thresholds = thresholds
    }

    /// Runs every check, in a fixed order. A check the role may not read (a worker login cannot
    /// read schema_migrations) is a warning that says so, not an error.
    public func run() throws -> [HealthCheck] {
        let checks: [(name: String, run: () throws -> HealthCheck)] = [
            ("migrations", { try migrations() }),
            ("oldest-transaction", oldestTransaction),
            ("dead-tuples", deadTuples),
            ("runnable-index", runnableIndex),
            ("stranded-leases", strandedLeases),
            ("idle-in-transaction-timeout", idleInTransactionTimeout),
        ]
        return try checks.map { check in
            do {
                return try check.run()
            } catch let error as PostgresError where error.sqlState == "42501" {
                return HealthCheck(name: check.name, verdict: .warn, evidence: "not checked: \(error.message)",
                                   fix: "run it as kiroku_admin (with pg_read_all_stats to see other roles' sessions)")
            }
        }
    }

    /// The schema's migration state against the migrations compiled into this binary.
    public func migrations(_ bundled: [Migration] = Migration.bundled) throws -> HealthCheck {
        let exists = try connection.query("SELECT to_regclass('kiroku.schema_migrations') IS NOT NULL AS ok").single("schema").bool("ok")
        guard exists else {
            return HealthCheck(name: "migrations", verdict: .fail, evidence: "no kiroku schema in this database",
                               fix: "run `kiroku migrate` as the schema's owner or a superuser")
        }
        let runner = MigrationRunner(migrations: bundled)
        let applied = try runner.appliedMigrations(connection)
        do {
            try runner.verify(applied: applied)
        } catch let error as MigrationError {
            return HealthCheck(name: "migrations", verdict: .fail, evidence: error.description,
                               fix: "deploy the kiroku build that matches the database")
        }
        let missing = bundled.filter { applied[$0.version] == nil }.map(\.name)
        if !missing.isEmpty {
            return HealthCheck(name: "migrations", verdict: .fail,
                               evidence: "\(applied.count) applied; not applied: \(missing.joined(separator: ", "))",
                               fix: "run `kiroku migrate`")
        }
        return HealthCheck(name: "migrations", verdict: .pass,
                           evidence: "all \(applied.count) migrations applied, checksums match", fix: nil)
    }

    /// The oldest open transaction or snapshot that holds back the xmin horizon of the queue's
    /// tables: sessions in this database (pg_stat_activity), prepared transactions and replication slots.
    public func oldestTransaction() throws -> HealthCheck {
        let limit = thresholds.oldestTransaction.seconds
        let holders = try transactionHolders()
        var slots: [(active: Bool, text: String)] = []
        for row in try connection.query("""
            SELECT slot_name, active, greatest(age(xmin), age(catalog_xmin)) AS xids
            FROM pg_replication_slots WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
            """) {
            let active = try row.bool("active")
            slots.append((active, "replication slot \(try row.string("slot_name")) (\(active ? "active" : "inactive")) holds the horizon \(try row.int("xids")) transactions back"))
        }
        let old = holders.filter { $0.age > limit }
        let inactiveSlots = slots.filter { !$0.active }.map(\.text)
        if !old.isEmpty || !inactiveSlots.isEmpty {
            return HealthCheck(
                name: "oldest-transaction", verdict: .fail,
                evidence: (old.map(\.text) + inactiveSlots).joined(separator: "; ") + " (limit \(Self.format(limit)))",
                fix: """
                    end it (pg_terminate_backend(pid), COMMIT/ROLLBACK PREPARED, pg_drop_replication_slot); \
                    while it lasts, dead queue rows cannot be cleaned and every claim slows down. \
                    Set idle_in_transaction_session_timeout on the roles that open it
                    """)
        }
        let evidence = holders.first.map { "oldest: \($0.text)" } ?? "no open transaction holds a snapshot"
        return HealthCheck(name: "oldest-transaction", verdict: .pass,
                           evidence: ([evidence] + slots.map(\.text)).joined(separator: "; "), fix: nil)
    }

    /// Sessions of this database holding a transaction or snapshot, and prepared transactions:
    /// the oldest three of each, with their age.
    func transactionHolders() throws(PostgresError) -> [(age: Double, text: String)] {
        var holders: [(age: Double, text: String)] = []
        for row in try connection.query("""
            SELECT pid, coalesce(nullif(application_name, ''), '-') AS application, coalesce(state, '?') AS state,
                   coalesce(usename::text, '?') AS role,
                   extract(epoch FROM now() - coalesce(xact_start, query_start))::float8 AS age
            FROM pg_stat_activity
            WHERE pid <> pg_backend_pid() AND datname = current_database()
              AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
              AND coalesce(xact_start, query_start) IS NOT NULL
            ORDER BY age DESC LIMIT 3
            """) {
            holders.append((try row.double("age"), "pid \(try row.int("pid")) (\(try row.string("application")), role \(try row.string("role")), \(try row.string("state"))) open \(Self.format(try row.double("age")))"))
        }
        for row in try connection.query("""
            SELECT gid, extract(epoch FROM now() - prepared)::float8 AS age FROM pg_prepared_xacts ORDER BY prepared LIMIT 3
            """) {
            holders.append((try row.double("age"), "prepared transaction '\(try row.string("gid"))' open \(Self.format(try row.double("age")))"))
        }
        return holders.sorted { $0.age > $1.age }
    }

    /// Live and dead rows and the time since the last (auto)vacuum of each queue table.
    func queueTables() throws(PostgresError) -> [(name: String, live: Int64, dead: Int64, sinceVacuum: Double?)] {
        try connection.query("""
            SELECT relname, n_live_tup AS live, n_dead_tup AS dead,
                   extract(epoch FROM now() - greatest(last_autovacuum, last_vacuum))::float8 AS since
            FROM pg_stat_user_tables
            WHERE schemaname = 'kiroku' AND relname IN ('jobs', 'job_images')
            ORDER BY relname
            """).map { row throws(PostgresError) in
            (try row.string("relname"), try row.int("live"), try row.int("dead"), try row.optionalDouble("since"))
        }
    }

    /// The gauges for /metrics.
    public func gauges() throws(PostgresError) -> HealthGauges {
        let tables = try queueTables()
        return HealthGauges(oldestTransactionSeconds: try transactionHolders().first?.age ?? 0,
                            deadTuples: Dictionary(uniqueKeysWithValues: tables.map { ($0.name, $0.dead) }),
                            liveTuples: Dictionary(uniqueKeysWithValues: tables.map { ($0.name, $0.live) }))
    }

    /// Dead rows and the last (auto)vacuum of the queue tables.
    public func deadTuples() throws -> HealthCheck {
        var findings: [String] = []
        var evidence: [String] = []
        for (name, live, dead, sinceVacuum) in try queueTables() {
            let since = sinceVacuum.map { Self.format($0) + " ago" } ?? "never"
            let line = "\(name): \(dead) dead of \(live + dead) rows, last vacuumed \(since)"
            evidence.append(line)
            let share = live + dead > 0 ? Double(dead) / Double(live + dead) : 0
            if dead >= thresholds.deadTupleMinimum && share > thresholds.deadTupleShare {
                findings.append(line)
            }
        }
        if !findings.isEmpty {
            return HealthCheck(
                name: "dead-tuples", verdict: .fail,
                evidence: findings.joined(separator: "; ") + " (limit \(Int(thresholds.deadTupleShare * 100))% and \(thresholds.deadTupleMinimum) rows)",
                fix: "look for an old transaction (the oldest-transaction check) that stops autovacuum; then VACUUM kiroku.jobs")
        }
        return HealthCheck(name: "dead-tuples", verdict: .pass, evidence: evidence.joined(separator: "; "), fix: nil)
    }

    /// The runnable index's size against the live entries it serves.
    public func runnableIndex() throws -> HealthCheck {
        let row = try connection.query("SELECT * FROM kiroku.runnable_index_facts()").single("index")
        let (bytes, entries) = (try row.int("bytes"), try row.int("entries"))
        // About 40 bytes per entry (pool, priority, id and the tuple header); never less than 1 MB.
        let needed = max(Double(entries) * 40, 1_048_576.0)
        let bloat = Double(bytes) / needed
        let evidence = "jobs_runnable: \(bytes / 1024) kB for \(entries) queued jobs (\(String(format: "%.1f", bloat))x what they need)"
        if bloat > thresholds.runnableIndexBloat {
            return HealthCheck(name: "runnable-index", verdict: .fail, evidence: evidence + " (limit \(thresholds.runnableIndexBloat)x)",
                               fix: "REINDEX INDEX CONCURRENTLY kiroku.jobs_runnable, after the oldest-transaction check passes")
        }
        return HealthCheck(name: "runnable-index", verdict: .pass, evidence: evidence, fix: nil)
    }

    /// Running jobs past their lease: a rescuer (any live worker) should have put them back.
    public func strandedLeases() throws -> HealthCheck {
        let row = try connection.query("SELECT * FROM kiroku.stranded_leases($1::interval)",
                                       [.text("\(thresholds.leaseOverrun.seconds) seconds")]).single("leases")
        let (stranded, worst, live) = (try row.int("stranded"), try row.double("worst"), try row.int("live"))
        if stranded > 0 {
            return HealthCheck(
                name: "stranded-leases", verdict: .fail,
                evidence: "\(stranded) running jobs past their lease by more than \(Self.format(thresholds.leaseOverrun)) (worst \(Self.format(worst))); \(live) live workers",
                fix: live == 0 ? "no worker is running to rescue them: start a worker, or SELECT kiroku.rescue_expired()"
                               : "the workers' rescue duty is not keeping up: check their logs; SELECT kiroku.rescue_expired() puts them back now")
        }
        return HealthCheck(name: "stranded-leases", verdict: .pass, evidence: "no running job is past its lease; \(live) live workers", fix: nil)
    }

    /// Whether login roles of the Kiroku groups (or the database, or the server) time out idle transactions.
    public func idleInTransactionTimeout() throws -> HealthCheck {
        let server = try connection.query("SELECT setting::bigint AS ms FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'").single("setting").int("ms")
        var unset: [String] = []
        for row in try connection.query("""
            SELECT r.rolname,
                   EXISTS (SELECT 1 FROM pg_db_role_setting AS s, unnest(s.setconfig) AS c
                           WHERE s.setrole IN (r.oid, 0) AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
                             AND c LIKE 'idle_in_transaction_session_timeout=%' AND c <> 'idle_in_transaction_session_timeout=0') AS covered
            FROM pg_roles AS r
            WHERE r.rolcanlogin AND EXISTS (
                SELECT 1 FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid
                WHERE m.member = r.oid AND g.rolname IN ('kiroku_producer', 'kiroku_worker', 'kiroku_admin', 'kiroku_viewer'))
            ORDER BY r.rolname
            """) where !(try row.bool("covered")) {
            unset.append(try row.string("rolname"))
        }
        if server > 0 {
            return HealthCheck(name: "idle-in-transaction-timeout", verdict: .pass,
                               evidence: "the server times out idle transactions after \(server) ms", fix: nil)
        }
        if unset.isEmpty {
            return HealthCheck(name: "idle-in-transaction-timeout", verdict: .pass,
                               evidence: "every Kiroku login role has idle_in_transaction_session_timeout set", fix: nil)
        }
        return HealthCheck(
            name: "idle-in-transaction-timeout", verdict: .warn,
            evidence: "no idle_in_transaction_session_timeout for: \(unset.joined(separator: ", "))",
            fix: "ALTER ROLE <role> SET idle_in_transaction_session_timeout = '60s' (an idle open transaction stalls queue cleanup; SECURITY.md has the values per role)")
    }

    static func format(_ duration: Duration) -> String { format(duration.seconds) }

    static func format(_ seconds: Double) -> String {
        seconds < 120 ? String(format: "%.1f s", seconds) : seconds < 7200 ? String(format: "%.0f min", seconds / 60) : String(format: "%.1f h", seconds / 3600)
    }
}
