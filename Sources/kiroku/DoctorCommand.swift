import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku doctor`: the queue's health checks, each with a verdict, the evidence and the fix.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check what slows a PostgreSQL queue: old transactions, dead rows, index bloat, stranded leases, migrations, timeouts.",
        discussion: """
            Exit code 1 when any check fails (for cron and monitoring); warnings do not fail. \
            To see other roles' sessions, run it as a role with pg_read_all_stats (or pg_monitor).
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Fail when a transaction or snapshot is older than this (e.g. 5m, 30s).", transform: DurationArgument.parse)
    var oldestTransaction = DurationArgument(duration: .seconds(300))

    @Option(help: "Fail when dead rows exceed this share of a queue table (0-1) ...")
    var deadTupleShare = 0.2

    @Option(help: "... and number at least this many.")
    var deadTupleMinimum: Int64 = 10_000

    @Option(help: "Fail when the runnable index is this many times the size its live entries need.")
    var indexBloat = 10.0

    @Option(help: "Fail when a running job is this far past its lease.", transform: DurationArgument.parse)
    var leaseOverrun = DurationArgument(duration: .seconds(120))

    @Flag(help: "Print the checks as one JSON object.")
    var json = false

    func validate() throws {
        guard (0...1).contains(deadTupleShare) else { throw ValidationError("--dead-tuple-share must be between 0 and 1") }
        guard indexBloat > 1 else { throw ValidationError("--index-bloat must be more than 1") }
    }

    func run() throws {
        var thresholds = HealthThresholds()
        thresholds.oldestTransaction = oldestTransaction.duration
        thresholds.deadTupleShare = deadTupleShare
        thresholds.deadTupleMinimum = deadTupleMinimum
        thresholds.runnableIndexBloat = indexBloat
        thresholds.leaseOverrun = leaseOverrun.duration
        let checks = try QueueHealth(connection: try database.connect(), thresholds: thresholds).run()
        let worst = checks.map(\.verdict).max() ?? .pass
        if json {
            struct Report: Codable { var verdict: HealthCheck.Verdict; var checks: [HealthCheck] }
            print(try JSONOutput.encode(Report(verdict: worst, checks: checks)))
        } else {
            for check in checks {
                print("\(check.verdict.rawValue.uppercased().padding(toLength: 4, withPad: " ", startingAt: 0))  \(check.name): \(check.evidence)")
                if let fix = check.fix { print("      fix: \(fix)") }
            }
        }
        if worst == .fail { throw ExitCode.failure }
    }
}
