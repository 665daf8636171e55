import ArgumentParser
import KirokuQueue

/// `kiroku prune`: deletes old finished jobs in batches.
struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete finished jobs (succeeded, failed, cancelled) older than a duration, in batches.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Delete jobs that finished longer ago than this, e.g. 7d, 12h.", transform: DurationArgument.parse)
    var olderThan: DurationArgument

    @Option(help: "Jobs deleted per transaction.")
    var batchSize: Int = 5000

    func validate() throws {
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() throws {
        let queue = try database.queue()
        var total = 0
        while true {
            let deleted = try queue.prune(olderThan: olderThan.duration, maxRows: batchSize)
            total += deleted
            if deleted < batchSize { break }
        }
        print("pruned \(total) finished jobs")
    }
}
