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
        let connection = try database.connect()
        var total: Int64 = 0
        while true {
            let deleted = try connection.query("SELECT kiroku.prune($1::interval, $2) AS deleted",
                                               [.text(olderThan.interval), .int(Int64(batchSize))]).single("prune").int("deleted")
            total += deleted
            if deleted < batchSize { break }
        }
        print("pruned \(total) finished jobs")
    }
}
