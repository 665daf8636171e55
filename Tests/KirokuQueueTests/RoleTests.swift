import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Roles")
struct RoleTests {
    func login(in group: String, database url: String) throws -> PostgresConnection {
        try TestDatabase.login(in: [group], database: url).connection
    }

    @Test("a producer enqueues and reads results but cannot claim or alter the schema")
    func producer() throws {
        let url = try TestDatabase.create()
        let producer = JobQueue(connection: try login(in: "kiroku_producer", database: url))
        let id = try producer.enqueue(NewJob(image: .inline(fakeJPEG("p"))))
        try producer.connection.execute("INSERT INTO kiroku.jobs (image_uri) VALUES ('https://x/y.jpg')")
        #expect(try producer.connection.query("SELECT state FROM kiroku.jobs WHERE id = $1", [.int(id)]).single("job").string("state") == "queued")

        let claim = #expect(throws: PostgresError.self) {
            try producer.claim(workerID: "sneaky", pool: "cpu", maxJobs: 1, lease: .seconds(10))
        }
        #expect(claim?.sqlState == "42501")
        // Nor by hand: no UPDATE privilege, and no inserting a job as already succeeded.
        #expect(throws: PostgresError.self) { try producer.connection.execute("UPDATE kiroku.jobs SET state = 'running'") }
        #expect(throws: PostgresError.self) {
            try producer.connection.execute("INSERT INTO kiroku.jobs (image_uri, state) VALUES ('https://x/z.jpg', 'succeeded')")
        }
        #expect(throws: PostgresError.self) { try producer.connection.execute("DROP TABLE kiroku.jobs") }
    }

    @Test("a worker claims and completes but cannot enqueue or alter the schema")
    func worker() throws {
        let url = try TestDatabase.create()
        _ = try JobQueue(connection: try PostgresConnection(url)).enqueue(NewJob(image: .inline(fakeJPEG("w"))))
        let worker = JobQueue(connection: try login(in: "kiroku_worker", database: url))
        let claimed = try worker.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(10))
        #expect(claimed.count == 1)
        #expect(try worker.complete(claimed[0].lease, resultJSON: "{}"))
        let alter = #expect(throws: PostgresError.self) { try worker.connection.execute("ALTER TABLE kiroku.jobs ADD COLUMN x int") }
        #expect(alter?.sqlState == "42501")
        #expect(throws: PostgresError.self) { try worker.enqueue(NewJob(image: .inline(fakeJPEG("no")))) }
    }
}
