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
                printError("kiroku: job \(id) was not requeued: \(try Self.explain(id, queue))")
                throw ReportedFailure()
            }
            print("requeued job \(id)")
            return
        }
        let (requeued, total) = try queue.requeueFailed(pool: pool)
        print("requeued \(requeued) of \(total) failed jobs"
              + (requeued < total ? "; \(total - requeued) hold an idempotency key that an unfinished job now holds" : ""))
    }

    /// Why requeue(id) returned false.
    static func explain(_ id: Int64, _ queue: JobQueue) throws -> String {
        guard let obstacle = try queue.requeueObstacle(jobID: id) else { return "it does not exist (or was pruned)" }
        if let holder = obstacle.holder {
            return "its idempotency key \(obstacle.key ?? "") is now held by unfinished job \(holder)"
        }
        return "it is \(obstacle.state); only failed or cancelled jobs can be requeued"
    }
}
