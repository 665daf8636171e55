import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

/// The attacks of SECURITY.md, each tried with real login roles against a real PostgreSQL.
@Suite("Security: roles, leases, limits, producers' reach")
struct SecurityTests {
    func count(_ connection: PostgresConnection, _ sql: String) throws -> Int64 {
        try connection.query(sql).single("count").int("n")
    }

    func sqlState(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as PostgresError {
            return error.sqlState
        } catch {
            return "\(error)"
        }
    }

    // MARK: Roles and ownership

    @Test("an admin's trigger cannot ride the SECURITY DEFINER functions to superuser, nor rewrite schema_migrations")
    func adminEscalation() throws {
        let url = try TestDatabase.create()
        _ = try JobQueue(connection: try PostgresConnection(url)).enqueue(NewJob(image: .inline(fakeJPEG("e"))))
        let (name, admin) = try TestDatabase.login(in: ["kiroku_admin"], database: url)
        try admin.execute("""
            CREATE FUNCTION pg_temp.evil() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN EXECUTE 'ALTER ROLE \(name) SUPERUSER'; RETURN NULL; END $$
            """)
        #expect(sqlState { try admin.execute("CREATE TRIGGER x AFTER UPDATE ON kiroku.jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.evil()") } == "42501")
        #expect(try admin.query("SELECT kiroku.cancel(1) AS ok").single("cancel").bool("ok"))
        let superuser = try PostgresConnection(url).query("SELECT rolsuper FROM pg_roles WHERE rolname = $1", [.text(name)])
        #expect(try superuser.single("role").bool("rolsuper") == false)

        for statement in ["UPDATE kiroku.schema_migrations SET checksum = 'x'", "DELETE FROM kiroku.schema_migrations",
                          "TRUNCATE kiroku.jobs", "ALTER TABLE kiroku.jobs DISABLE ROW LEVEL SECURITY",
                          "CREATE TABLE kiroku.mine (id int)",
                          "CREATE OR REPLACE FUNCTION kiroku.cancel(job_id bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'"] {
            #expect(sqlState { try admin.execute(statement) } == "42501", "\(statement)")
        }
        // What an admin is for still works: data, not structure.
        #expect(try count(admin, "SELECT count(*) AS n FROM kiroku.schema_migrations") == Int64(Migration.bundled.count))
        try admin.execute("UPDATE kiroku.jobs SET priority = 5; DELETE FROM kiroku.workers")
    }

    @Test("kiroku_owner owns everything, can do nothing else, and every function has a fixed search_path and no PUBLIC execute")
    func ownership() throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let owner = try connection.query("""
            SELECT rolsuper OR rolcreaterole OR rolcanlogin OR rolbypassrls OR rolcreatedb AS powerful FROM pg_roles WHERE rolname = 'kiroku_owner'
            """).single("owner")
        #expect(try owner.bool("powerful") == false)
        #expect(try count(connection, """
            SELECT count(*) AS n FROM pg_class WHERE relnamespace = 'kiroku'::regnamespace AND relowner <> 'kiroku_owner'::regrole
            """) == 0)
        #expect(try count(connection, """
            SELECT count(*) AS n FROM pg_proc WHERE pronamespace = 'kiroku'::regnamespace AND proowner <> 'kiroku_owner'::regrole
            """) == 0)
        #expect(try count(connection, "SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'kiroku' AND nspowner = 'kiroku_owner'::regrole") == 1)
        let unpinned = try connection.query("""
            SELECT string_agg(proname, ', ') AS names FROM pg_proc
            WHERE pronamespace = 'kiroku'::regnamespace
              AND NOT coalesce(proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false)
            """).single("functions")
        #expect(try unpinned.optionalString("names") == nil)
        let executable = try connection.query("""
            SELECT string_agg(proname, ', ') AS names FROM pg_proc
            WHERE pronamespace = 'kiroku'::regnamespace AND has_function_privilege('public', oid, 'EXECUTE')
            """).single("functions")
        #expect(try executable.optionalString("names") == nil)
        // Admin table privileges: exactly SELECT, INSERT, UPDATE, DELETE on data; SELECT on the rest.
        let extra = try connection.query("""
            SELECT string_agg(c.relname || ':' || p.privilege_type, ', ') AS grants
            FROM pg_class AS c, aclexplode(c.relacl) AS p
            WHERE c.relnamespace = 'kiroku'::regnamespace AND p.grantee = 'kiroku_admin'::regrole
              AND (p.privilege_type IN ('TRIGGER', 'TRUNCATE', 'REFERENCES')
                   OR (c.relname = 'schema_migrations' AND p.privilege_type <> 'SELECT'))
            """).single("grants")
        #expect(try extra.optionalString("grants") == nil)
    }

    @Test("kiroku migrate by a non-superuser with CREATEROLE hands ownership to kiroku_owner too")
    func nonSuperuserMigration() throws {
        let url = try TestDatabase.create(migrated: false)
        let (name, migrator) = try TestDatabase.login(in: [], database: url, attributes: "CREATEROLE")
        let database = URLComponents(string: url)!.path.dropFirst()
        try PostgresConnection(url).execute("ALTER DATABASE \(database) OWNER TO \(name)")
        try MigrationRunner(logger: TestDatabase.quietLogger).migrate(migrator)
        #expect(try count(migrator, """
            SELECT count(*) AS n FROM pg_class WHERE relnamespace = 'kiroku'::regnamespace AND relowner <> 'kiroku_owner'::regrole
            """) == 0)
        #expect(try MigrationRunner(logger: TestDatabase.quietLogger).migrate(migrator).isEmpty, "and again: nothing to do")
    }

    // MARK: Leases

    @Test("another worker login reads kiroku.jobs but cannot complete, fail, heartbeat or release a lease it does not hold")
    func forgedLeases() throws {
        let url = try TestDatabase.create()
        _ = try JobQueue(connection: try PostgresConnection(url)).enqueue(NewJob(image: .inline(fakeJPEG("f"))))
        let honest = JobQueue(connection: try TestDatabase.login(in: ["kiroku_worker"], database: url).connection)
        let thief = JobQueue(connection: try TestDatabase.login(in: ["kiroku_worker"], database: url).connection)
        let claimed = try honest.claim(workerID: "honest", pool: "cpu", maxJobs: 1, lease: .seconds(60))
        let job = claimed[0]
        // Everything the table shows about the lease.
        let row = try thief.connection.query("""
            SELECT worker_id, attempt, encode(lease_token_hash, 'hex') AS hash FROM kiroku.jobs WHERE id = $1
            """, [.int(job.id)]).single("job")
        #expect(try row.string("hash") != job.lease.token, "the table keeps only a hash")
        for guess in [try row.string("hash"), try row.string("worker_id"), "\(try row.int("attempt"))", ""] {
            let forged = JobLease(id: job.id, token: guess)
            #expect(try thief.complete(forged, resultJSON: #"{"forged": true}"#) == false)
            #expect(try thief.fail(forged, error: "x", retryable: true) == nil)
            #expect(try thief.heartbeat(workerID: "thief", leases: [forged], lease: .seconds(3600)) == 0)
            #expect(try thief.release([forged]) == 0)
        }
        // A negative lease (to expire the job and steal it on rescue) is refused outright.
        for lease in ["-1 second", "0 seconds", "0.5 seconds", "2 hours"] {
            #expect(sqlState {
                try thief.connection.query("SELECT kiroku.heartbeat('thief', $1::int8[], ARRAY['x'], $2::interval)",
                                           [.array(.int8, [.int(job.id)]), .text(lease)])
            } == "22023", "heartbeat lease \(lease)")
            #expect(sqlState {
                try thief.connection.query("SELECT * FROM kiroku.claim('thief', 'cpu', 1, $1::interval)", [.text(lease)])
            } == "22023", "claim lease \(lease)")
        }
        #expect(try honest.complete(job.lease, resultJSON: #"{"honest": true}"#))
        #expect(try thief.connection.query("SELECT result->>'honest' AS r FROM kiroku.jobs").single("job").string("r") == "true")
    }

    @Test("a lease token holds only the jobs of the claim that drew it, even for the same worker")
    func tokenPerClaim() throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(batch: (0..<4).map { NewJob(image: .inline(fakeJPEG("c\($0)"))) })
        let first = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(60))
        let second = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(60))
        #expect(first.count == 2 && second.count == 2)
        #expect(first[0].lease.token == first[1].lease.token, "one token per call")
        #expect(first[0].lease.token != second[0].lease.token, "a fresh token for each call")
        #expect(first[0].lease.token.count == 64)
        // The first claim's token on the second claim's jobs: nothing changes.
        let crossed = second.map { JobLease(id: $0.id, token: first[0].lease.token) }
        #expect(try queue.heartbeat(workerID: "w", leases: crossed, lease: .seconds(600)) == 0)
        #expect(try queue.complete(crossed[0], resultJSON: "{}") == false)
        #expect(try queue.fail(crossed[1], error: "x", retryable: false) == nil)
        #expect(try queue.release(crossed) == 0)
        #expect(try queue.release(second.map(\.lease)) == 2)
        #expect(try queue.complete(first[1].lease, resultJSON: "{}"))
    }

    @Test("NULL arguments are errors, not states; a job twice in one complete_many is an error")
    func nullArguments() throws {
        let queue = try TestDatabase.queue()
        _ = try queue.enqueue(batch: [NewJob(image: .inline(fakeJPEG("n1"))), NewJob(image: .inline(fakeJPEG("n2")))])
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(60))
        let (id, token) = (claimed[0].id, claimed[0].lease.token)
        let calls: [(String, [PostgresBind])] = [
            ("SELECT kiroku.fail($1, $2, 'e', NULL)", [.int(id), .text(token)]),
            ("SELECT kiroku.fail($1, $2, NULL, true)", [.int(id), .text(token)]),
            ("SELECT kiroku.fail($1, NULL, 'e', true)", [.int(id)]),
            ("SELECT kiroku.complete($1, $2, NULL)", [.int(id), .text(token)]),
            ("SELECT kiroku.complete($1, NULL, '{}')", [.int(id)]),
            ("SELECT * FROM kiroku.complete_many(ARRAY[$1, $1]::int8[], ARRAY[$2, $2], ARRAY['{}', '{}']::jsonb[])", [.int(id), .text(token)]),
            ("SELECT * FROM kiroku.complete_many(ARRAY[$1]::int8[], ARRAY[$2], ARRAY['[1]']::jsonb[])", [.int(id), .text(token)]),
            ("SELECT * FROM kiroku.complete_many(ARRAY[$1]::int8[], ARRAY[$2, $2], ARRAY['{}']::jsonb[])", [.int(id), .text(token)]),
            ("SELECT kiroku.release(ARRAY[$1, NULL]::int8[], ARRAY[$2, 'x'])", [.int(id), .text(token)]),
            ("SELECT * FROM kiroku.claim(NULL, 'cpu', 1, '1 minute')", []),
        ]
        for (sql, binds) in calls {
            let state = sqlState { try queue.connection.query(sql, binds) }
            #expect(state == "22004" || state == "22023", "\(sql): \(String(describing: state))")
        }
        #expect(try queue.connection.query("SELECT state FROM kiroku.jobs WHERE id = $1", [.int(id)]).single("job").string("state") == "running")
    }

    @Test("attempts only grow: release and requeue credit attempts instead of taking them back")
    func attemptsGrow() throws {
        let queue = try TestDatabase.queue()
        let id = try queue.enqueue(NewJob(image: .inline(fakeJPEG("a"))))
        try queue.connection.execute("UPDATE kiroku.jobs SET max_attempts = 1")
        var seen: [Int] = []
        for _ in 0..<2 {
            let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(60))
            seen.append(claimed[0].attempt)
            #expect(try queue.release([claimed[0].lease]) == 1)
        }
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(60))
        seen.append(claimed[0].attempt)
        #expect(try queue.fail(claimed[0].lease, error: "x", retryable: true) == .failed, "its one counted attempt is used")
        #expect(try queue.requeue(jobID: id))
        let again = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(60))
        seen.append(again[0].attempt)
        #expect(seen == [1, 2, 3, 4])
        #expect(try queue.fail(again[0].lease, error: "x", retryable: false) == .failed)
    }

    // MARK: Idempotency keys and producers' reach

    @Test("a key reused for another image, model or pool is an error naming the key and the job; the same request returns the job")
    func idempotencyClash() throws {
        let queue = try TestDatabase.queue()
        let first = try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), model: "m", pool: "cpu", idempotencyKey: "k"))
        #expect(try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), model: "m", pool: "cpu", idempotencyKey: "k")) == first)
        #expect(try queue.enqueue(NewJob(image: .inline(fakeJPEG("i")), model: "m", idempotencyKey: "k")) == first, "a routed pool is no clash")
        for (job, what) in [(NewJob(image: .inline(fakeJPEG("other")), model: "m", idempotencyKey: "k"), "image"),
                            (NewJob(image: .uri("https://cdn.example/i.jpg"), model: "m", idempotencyKey: "k"), "image"),
                            (NewJob(image: .inline(fakeJPEG("i")), idempotencyKey: "k"), "model"),
                            (NewJob(image: .inline(fakeJPEG("i")), model: "m", pool: "gpu", idempotencyKey: "k"), "pool")] {
            let error = #expect(throws: PostgresError.self) { try queue.enqueue(job) }
            #expect(error?.message.contains("idempotency key 'k' already names job \(first), which has another \(what)") == true,
                    "\(String(describing: error))")
        }
        let inOneCall = #expect(throws: PostgresError.self) {
            try queue.enqueue(batch: [NewJob(image: .inline(fakeJPEG("x")), idempotencyKey: "k2"),
                                      NewJob(image: .inline(fakeJPEG("y")), idempotencyKey: "k2")])
        }
        #expect(inOneCall?.message.contains("idempotency key 'k2'") == true)
        #expect(try count(queue.connection, "SELECT count(*) AS n FROM kiroku.jobs") == 1, "the failed calls left nothing")
    }

    @Test("row-level security: a producer reads and cancels only its own jobs; workers and admins see all; who enqueued is recorded")
    func producersOwnJobs() throws {
        let url = try TestDatabase.create()
        let (aliceName, aliceConnection) = try TestDatabase.login(in: ["kiroku_producer"], database: url)
        let alice = JobQueue(connection: aliceConnection)
        let (bobName, bobConnection) = try TestDatabase.login(in: ["kiroku_producer"], database: url)
        let bob = JobQueue(connection: bobConnection)
        let alices = try alice.enqueue(NewJob(image: .inline(fakeJPEG("alice"))))
        try alice.connection.execute("INSERT INTO kiroku.jobs (image_uri) VALUES ('https://cdn.example/a.jpg')")
        let bobs = try bob.enqueue(NewJob(image: .uri("https://cdn.example/b.jpg")))

        #expect(try count(alice.connection, "SELECT count(*) AS n FROM kiroku.jobs") == 2)
        #expect(try count(bob.connection, "SELECT count(*) AS n FROM kiroku.jobs") == 1)
        #expect(try bob.connection.query("SELECT id FROM kiroku.jobs WHERE id = $1", [.int(alices)]).rows.isEmpty)
        #expect(try bob.cancel(jobID: alices) == false, "not his to cancel")
        #expect(try alice.cancel(jobID: bobs) == false)
        #expect(try bob.cancel(jobID: bobs))
        #expect(sqlState { try bob.connection.execute("INSERT INTO kiroku.jobs (image_uri, enqueued_by) VALUES ('https://x/y.jpg', '\(aliceName)')") } == "42501")

        let owners = try PostgresConnection(url).query("SELECT enqueued_by, count(*) AS n FROM kiroku.jobs GROUP BY 1 ORDER BY 1")
        #expect(try Dictionary(uniqueKeysWithValues: owners.rows.map { (try $0.string("enqueued_by"), try $0.int("n")) })
                == [aliceName: 2, bobName: 1])
        let worker = try TestDatabase.login(in: ["kiroku_worker"], database: url).connection
        #expect(try count(worker, "SELECT count(*) AS n FROM kiroku.jobs") == 3)
        let admin = JobQueue(connection: try TestDatabase.login(in: ["kiroku_admin"], database: url).connection)
        #expect(try count(admin.connection, "SELECT count(*) AS n FROM kiroku.jobs") == 3)
        #expect(try admin.cancel(jobID: alices))

        // Idempotency keys are each producer's own: Bob's key neither returns Alice's job nor clashes with it.
        let alicesKeyed = try alice.enqueue(NewJob(image: .inline(fakeJPEG("a")), idempotencyKey: "order-1"))
        let bobsKeyed = try bob.enqueue(NewJob(image: .inline(fakeJPEG("b")), idempotencyKey: "order-1"))
        #expect(alicesKeyed != bobsKeyed)
        #expect(try bob.enqueue(NewJob(image: .inline(fakeJPEG("b")), idempotencyKey: "order-1")) == bobsKeyed)
    }

    // MARK: Limits

    @Test("inline images over the cap are refused on every path; the cap is the admin's; claims keep to a byte budget")
    func sizeLimits() throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        #expect(try count(queue.connection, "SELECT max_inline_bytes AS n FROM kiroku.settings") == 50 << 20)
        let producer = JobQueue(connection: try TestDatabase.login(in: ["kiroku_producer"], database: url).connection)
        #expect(sqlState { try producer.connection.execute("SELECT kiroku.set_max_inline_bytes(1000000000)") } == "42501")
        let admin = JobQueue(connection: try TestDatabase.login(in: ["kiroku_admin"], database: url).connection)
        try admin.connection.execute("SELECT kiroku.set_max_inline_bytes(1000)")
        #expect(sqlState { try admin.connection.execute("SELECT kiroku.set_max_inline_bytes(0)") } == "22023")

        let tooBig = fakeJPEG("big") + [UInt8](repeating: 1, count: 1000)
        let error = #expect(throws: PostgresError.self) { try producer.enqueue(NewJob(image: .inline(tooBig))) }
        #expect(error?.sqlState == "54000" && error?.message.contains("over the maximum of 1000 bytes") == true)
        let id = try producer.enqueue(NewJob(image: .uri("https://cdn.example/x.jpg")))
        #expect(sqlState {
            try admin.connection.query("INSERT INTO kiroku.job_images (job_id, image) VALUES ($1, $2)", [.int(id), .bytea(tooBig)])
        } == "42501", "image bytes enter through the enqueue functions only")
        #expect(sqlState {
            try queue.connection.query("INSERT INTO kiroku.job_images (job_id, image) VALUES ($1, $2)", [.int(id), .bytea(tooBig)])
        } == "54000", "the cap holds on a plain INSERT, even the owner's")
        #expect(sqlState { try admin.connection.execute("DELETE FROM kiroku.settings") } == "42501", "the cap cannot be deleted away")
        #expect(try count(queue.connection, "SELECT count(*) AS n FROM kiroku.job_images") == 0)

        // Three 603-byte images: a 1300-byte budget takes two; a 100-byte one still takes the first.
        try queue.connection.execute("DELETE FROM kiroku.jobs")
        _ = try queue.enqueue(batch: (0..<3).map { NewJob(image: .inline(fakeJPEG("\($0)") + [UInt8](repeating: 0, count: 598))) })
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 10, lease: .seconds(60), maxBytes: 1300).count == 2)
        #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 10, lease: .seconds(60), maxBytes: 100).count == 1)
    }

    @Test("pool names, max_attempts and URIs keep to their ranges on every enqueue path; a job has one image source")
    func shapeLimits() throws {
        let queue = try TestDatabase.queue()
        #expect(sqlState {
            try queue.connection.execute("""
                SELECT * FROM kiroku.enqueue_many(ARRAY['\\xffd8'::bytea], ARRAY['https://x/y.jpg'], ARRAY[NULL::text],
                    ARRAY[NULL::int], ARRAY[NULL::text], ARRAY[NULL::text], ARRAY[NULL::timestamptz])
                """)
        } == "22023")
        for pool in ["", "Bad Pool", "gpu;drop", String(repeating: "p", count: 64)] {
            let error = #expect(throws: PostgresError.self) { try queue.enqueue(NewJob(image: .inline(fakeJPEG("p")), pool: pool)) }
            #expect(error?.sqlState == "22023", "pool '\(pool)'")
            #expect(sqlState { try queue.connection.query("INSERT INTO kiroku.jobs (image_uri, pool) VALUES ('https://x/y.jpg', $1)", [.text(pool)]) } == "23514")
        }
        for attempts in [0, 101] {
            #expect(sqlState { try queue.connection.execute("INSERT INTO kiroku.jobs (image_uri, max_attempts) VALUES ('https://x/y.jpg', \(attempts))") } == "23514")
        }
        #expect(sqlState { _ = try queue.enqueue(NewJob(image: .uri("https://x/" + String(repeating: "a", count: 5000)))) } == "23514")
        #expect(sqlState { try queue.setRoutes([("GPU", 1)]) } == "23514")
        #expect(try count(queue.connection, "SELECT count(*) AS n FROM kiroku.jobs") == 0)
    }

    @Test("prune never deletes an unfinished job: a running shadow duplicate outlives its finished original")
    func pruneKeepsUnfinished() throws {
        let queue = try TestDatabase.queue()
        try queue.connection.execute("SELECT kiroku.set_shadow(1.0, 'cpu', 'gpu')")
        let original = try queue.enqueue(NewJob(image: .inline(fakeJPEG("o")), pool: "cpu"))
        let claimed = try queue.claim(workerID: "c", pool: "cpu", maxJobs: 1, lease: .seconds(60))
        #expect(try queue.complete(claimed[0].lease, resultJSON: "{}"))
        let duplicate = try queue.claim(workerID: "g", pool: "gpu", maxJobs: 1, lease: .seconds(60))
        #expect(duplicate.count == 1)
        try queue.connection.execute("UPDATE kiroku.jobs SET finished_at = now() - interval '2 days' WHERE id = \(original)")
        #expect(try count(queue.connection, "SELECT kiroku.prune('1 day') AS n") == 0, "the original waits for its duplicate")
        // An admin's DELETE of the original leaves the duplicate running, unlinked.
        try queue.connection.execute("DELETE FROM kiroku.jobs WHERE id = \(original)")
        let left = try queue.connection.query("SELECT state, shadow_of FROM kiroku.jobs WHERE id = $1", [.int(duplicate[0].id)]).single("duplicate")
        #expect(try left.string("state") == "running" && left.isNull("shadow_of"))
        #expect(try queue.complete(duplicate[0].lease, resultJSON: "{}"))
    }

    // MARK: Findings of the attacker's review

    @Test("a producer's open transaction on one job does not stall a worker's heartbeat of its other leases")
    func heartbeatSkipsHeldRows() throws {
        let url = try TestDatabase.create()
        let producer = JobQueue(connection: try TestDatabase.login(in: ["kiroku_producer"], database: url).connection)
        let ids = try producer.enqueue(batch: [NewJob(image: .uri("https://cdn.example/1.jpg")), NewJob(image: .uri("https://cdn.example/2.jpg"))]).map(\.id)
        let worker = JobQueue(connection: try TestDatabase.login(in: ["kiroku_worker"], database: url).connection)
        let claimed = try worker.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(60))
        try producer.connection.execute("BEGIN")
        #expect(try producer.cancel(jobID: ids[1]))
        try worker.connection.execute("SET lock_timeout = '5s'")
        #expect(try worker.heartbeat(workerID: "w", leases: claimed.map(\.lease), lease: .seconds(60)) == 1)
        try producer.connection.execute("ROLLBACK")
        #expect(try worker.heartbeat(workerID: "w", leases: claimed.map(\.lease), lease: .seconds(60)) == 2)
    }

    @Test("a worker login touches only the worker rows it registered; speeds are bounded")
    func workerRows() throws {
        let url = try TestDatabase.create()
        let honest = JobQueue(connection: try TestDatabase.login(in: ["kiroku_worker"], database: url).connection)
        let rogue = JobQueue(connection: try TestDatabase.login(in: ["kiroku_worker"], database: url).connection)
        try honest.registerWorker(id: "host-a/1", host: "host-a", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 4, version: "t")
        try honest.reportWorkerSpeed(id: "host-a/1", instanceType: "c5.xlarge", imagesPerSecond: 12)
        try rogue.reportWorkerSpeed(id: "host-a/1", instanceType: "c7i.metal", imagesPerSecond: 9000)
        try rogue.deregisterWorker(id: "host-a/1")
        try rogue.registerWorker(id: "host-a/1", host: "ghost", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 64, version: "t")
        let row = try honest.connection.query("SELECT instance_type, images_per_second, stopped_at IS NULL AS live, host FROM kiroku.workers")
            .single("worker")
        #expect(try row.string("instance_type") == "c5.xlarge" && row.double("images_per_second") == 12)
        #expect(try row.bool("live") && row.string("host") == "host-a")
        try rogue.registerWorker(id: "ghost/1", host: "ghost", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 64, version: "t")
        #expect(sqlState { try rogue.reportWorkerSpeed(id: "ghost/1", instanceType: nil, imagesPerSecond: 1e9) } == "23514")
        let admin = JobQueue(connection: try TestDatabase.login(in: ["kiroku_admin"], database: url).connection)
        try admin.deregisterWorker(id: "ghost/1")
        #expect(try count(admin.connection, "SELECT count(*) AS n FROM kiroku.workers WHERE stopped_at IS NOT NULL") == 1)
    }

    @Test("a producer's setseed() cannot steer shadow sampling or routing")
    func unseedableDraws() throws {
        let url = try TestDatabase.create()
        try PostgresConnection(url).execute("SELECT kiroku.set_shadow(0.5, 'cpu', 'gpu')")
        let producer = try TestDatabase.login(in: ["kiroku_producer"], database: url).connection
        for index in 0..<20 {
            try producer.execute("SELECT setseed(0.181)")
            try producer.query("SELECT kiroku.enqueue_uri($1, pool => 'cpu')", [.text("https://cdn.example/\(index).jpg")])
        }
        // With random() every draw would be the same: all 20 sampled or none.
        let duplicates = try count(PostgresConnection(url), "SELECT count(*) AS n FROM kiroku.jobs WHERE shadow_of IS NOT NULL")
        #expect(duplicates > 0 && duplicates < 20, "\(duplicates) of 20 sampled")
    }
}
