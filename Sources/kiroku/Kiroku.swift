import ArgumentParser
import Foundation
import KirokuQueue
import Logging

/// The root command.
struct Kiroku: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kiroku",
        abstract: "Image classification on CPU fleets, fed by a PostgreSQL job queue.",
        discussion: """
            Database connection: --database-url, else KIROKU_DATABASE_URL, else DATABASE_URL, \
            else libpq's defaults (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ...).
            Exit codes: 0 success, 1 runtime error, 2 usage error.
            """,
        version: KirokuVersion.current,
        subcommands: [Migrate.self, Enqueue.self, Status.self, Doctor.self, Jobs.self, Results.self, Requeue.self, Prune.self, Infer.self, Bench.self, Quantize.self, Classify.self, WorkerCommand.self, Advise.self, AutoscalerCommand.self, Route.self, Shadow.self, DashboardCommand.self, Simulate.self]
    )
}

/// The version printed by --version and recorded by workers.
enum KirokuVersion {
    static let current = "0.1.0"
}

/// An error in how the command was used, found after parsing (exit code 2).
struct UsageError: Error, CustomStringConvertible {
    let description: String
}

/// A runtime failure already reported to the user (exit code 1).
struct ReportedFailure: Error {}

@main
enum EntryPoint {
    static func main() async {
        bootstrapLogging()
        do {
            var command = try Kiroku.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as UsageError {
            printError("kiroku: \(error)")
            exit(2)
        } catch is ReportedFailure {
            exit(1)
        } catch {
            switch Kiroku.exitCode(for: error) {
            case .success:
                Kiroku.exit(withError: error)  // --help, --version, a bare command group
            case .validationFailure:
                printError(Kiroku.fullMessage(for: error))
                exit(2)
            default:
                printError(error is ExitCode ? Kiroku.fullMessage(for: error) : "kiroku: error: \(error)")
                exit(error is ExitCode ? Kiroku.exitCode(for: error).rawValue : 1)
            }
        }
    }

    /// swift-log to standard error; the level from KIROKU_LOG_LEVEL (default: info).
    static func bootstrapLogging() {
        let level = ProcessInfo.processInfo.environment["KIROKU_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
