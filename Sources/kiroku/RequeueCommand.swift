import ArgumentParser
import KirokuQueue

/// `kiroku requeue`: puts failed or cancelled jobs back in the queue with fresh attempts.
struct Requeue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put a failed or cancelled job (or every failed job) back in the queue with fresh attempts.")

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The job id.")
    var id: Int64?

    @Flag(help: "Requeue every failed job.")
    var failed = false

    @Option(help: "With --failed: only jobs of this pool.")
    var pool: String?

    func validate() throws {
        guard (id != nil) != failed else { throw ValidationError("give either a job ID or --failed") }
        if pool != nil && !failed { throw ValidationError("--pool goes with --failed") }
    }

    func run() throws {
        let queue = try database.queue()
        if let id {
            guard try queue.requeue(jobID: id) else {
                printError("kiroku: job \(id) was not requeued: \(try Self.explain(id, queue.connection))")
                throw ReportedFailure()
            }
            print("requeued job \(id)")
            return
        }
        let row = try queue.connection.query("""
            SELECT count(*) FILTER (WHERE kiroku.requeue(f.id)) AS requeued, count(*) AS failed
            FROM (SELECT id FROM kiroku.jobs WHERE state = 'failed' AND ($1::text IS NULL OR pool = $1) ORDER BY id) AS f
            """, [pool.map(PostgresBind.text) ?? .null]).single("requeue")
        let requeued = try row.int("requeued"), total = try row.int("failed")
        print("requeued \(requeued) of \(total) failed jobs"
              + (requeued < total ? "; \(total - requeued) hold an idempotency key that an unfinished job now holds" : ""))
    }

    /// Why requeue(id) returned false.
    static func explain(_ id: Int64, _ connection: PostgresConnection) throws -> String {
        let rows = try connection.query("""
            SELECT j.state, j.idempotency_key,
                   (SELECT o.id FROM kiroku.jobs AS o
                    WHERE o.idempotency_key = j.idempotency_key AND o.state IN ('queued', 'scheduled', 'running') AND o.id <> j.id) AS holder
            FROM kiroku.jobs AS j WHERE j.id = $1
            """, [.int(id)])
        guard let row = rows.rows.first else { return "it does not exist (or was pruned)" }
        let state = try row.string("state")
        if let holder = try row.optionalInt("holder") {
            return "its idempotency key \(try row.string("idempotency_key")) is now held by unfinished job \(holder)"
        }
        return "it is \(state); only failed or cancelled jobs can be requeued"
    }
}
