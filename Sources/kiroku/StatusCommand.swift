import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku status`: queue depth per pool and state, recent throughput, live workers.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show queue depth per pool and state, recent throughput and live workers.")

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() throws {
        let report = try QueueStatusReport.read(try database.connect())
        if json {
            print(try JSONOutput.encode(report))
        } else {
            print(report.text)
        }
    }
}

/// A snapshot of the queue, as `kiroku status` prints it.
struct QueueStatusReport: Codable {
    struct Pool: Codable {
        var pool: String
        /// Every job waiting: ready + scheduled.
        var queued = 0
        /// Due and waiting for a claim.
        var ready = 0
        /// Not yet due (delayed jobs, retries in backoff), the next of them due at `nextDueAt`.
        var scheduled = 0
        var nextDueAt: Date?
        var dueWithinHour = 0
        var running = 0
        var succeeded = 0
        var failed = 0
        var cancelled = 0
        var oldestQueuedAgeSeconds = 0.0
        var finishedLastFiveMinutes = 0
        var jobsPerSecond = 0.0
        var meanServiceSeconds: Double?
        var meanWaitSeconds: Double?
    }

    struct Worker: Codable {
        var id: String
        var host: String
        var pool: String
        var model: String
        var cores: Int
        var version: String
        var startedAt: Date
        var lastSeen: Date
    }

    var pools: [Pool]
    var workers: [Worker]
    /// The `kiroku doctor` checks that failed.
    var failedChecks: [HealthCheck]

    /// Reads the views and tables behind the report.
    static func read(_ connection: PostgresConnection) throws -> QueueStatusReport {
        var pools: [String: Pool] = [:]
        for row in try connection.query("SELECT pool, state, count(*) AS jobs FROM kiroku.jobs GROUP BY pool, state") {
            let name = try row.string("pool")
            var pool = pools[name] ?? Pool(pool: name)
            let count = Int(try row.int("jobs"))
            switch JobState(rawValue: try row.string("state")) {
            case .scheduled, .queued: pool.queued += count
            case .running: pool.running = count
            case .succeeded: pool.succeeded = count
            case .failed: pool.failed = count
            case .cancelled: pool.cancelled = count
            case nil: break
            }
            pools[name] = pool
        }
        for row in try connection.query("""
            SELECT pool, ready, scheduled, next_due_at, due_within_hour, extract(epoch FROM oldest_queued_age)::float8 AS oldest
            FROM kiroku.queue_depth
            """) {
            let name = try row.string("pool")
            pools[name]?.ready = Int(try row.int("ready"))
            pools[name]?.scheduled = Int(try row.int("scheduled"))
            pools[name]?.nextDueAt = try row.optionalDate("next_due_at")
            pools[name]?.dueWithinHour = Int(try row.int("due_within_hour"))
            pools[name]?.oldestQueuedAgeSeconds = try row.double("oldest")
        }
        for row in try connection.query("SELECT * FROM kiroku.recent_throughput") {
            let name = try row.string("pool")
            pools[name]?.finishedLastFiveMinutes = Int(try row.int("finished"))
            pools[name]?.jobsPerSecond = try row.double("jobs_per_second")
            pools[name]?.meanServiceSeconds = try row.optionalDouble("mean_service_seconds")
            pools[name]?.meanWaitSeconds = try row.optionalDouble("mean_wait_seconds")
        }
        let workers = try connection.query("""
            SELECT id, host, pool, model, cores, version, started_at, last_seen
            FROM kiroku.workers
            WHERE stopped_at IS NULL AND last_seen > now() - interval '2 minutes'
            ORDER BY pool, host, id
            """).map { row in
            Worker(id: try row.string("id"), host: try row.string("host"), pool: try row.string("pool"),
                   model: try row.string("model"), cores: Int(try row.int("cores")), version: try row.string("version"),
                   startedAt: try row.date("started_at"), lastSeen: try row.date("last_seen"))
        }
        let failed = try QueueHealth(connection: connection).run().filter { $0.verdict == .fail }
        return QueueStatusReport(pools: pools.values.sorted { $0.pool < $1.pool }, workers: workers, failedChecks: failed)
    }

    /// The report for a terminal.
    var text: String {
        queueText + (failedChecks.isEmpty ? "" : "\n\nwarning: " + failedChecks.map { "\($0.name): \($0.evidence)" }.joined(separator: "; ")
            + " (kiroku doctor has the fixes)")
    }

    private var queueText: String {
        guard !pools.isEmpty else { return "no jobs\n\(workersText)" }
        var table = TextTable(header: ["POOL", "READY", "SCHEDULED", "NEXT DUE", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "OLDEST WAIT",
                                       "JOBS/S (5m)", "SERVICE"])
        for pool in pools {
            table.rows.append([
                pool.pool, "\(pool.ready)", "\(pool.scheduled)", pool.nextDueAt.map(Self.dueText) ?? "-", "\(pool.running)",
                "\(pool.succeeded)", "\(pool.failed)",
                "\(pool.cancelled)", String(format: "%.1fs", pool.oldestQueuedAgeSeconds),
                String(format: "%.2f", pool.jobsPerSecond),
                pool.meanServiceSeconds.map { String(format: "%.0fms", $0 * 1000) } ?? "-",
            ])
        }
        return table.render() + "\n\n" + workersText
    }

    /// "in 42s" or "in 1h05m" (when the next scheduled job comes due), "now" once it is due.
    private static func dueText(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSinceNow.rounded(.up))
        switch seconds {
        case ...0: return "now"
        case ..<120: return "in \(seconds)s"
        case ..<7200: return "in \(seconds / 60)m"
        default: return String(format: "in %dh%02dm", seconds / 3600, seconds % 3600 / 60)
        }
    }

    private var workersText: String {
        guard !workers.isEmpty else { return "no live workers" }
        var table = TextTable(header: ["WORKER", "HOST", "POOL", "MODEL", "CORES", "VERSION", "LAST SEEN"])
        for worker in workers {
            table.rows.append([worker.id, worker.host, worker.pool, worker.model, "\(worker.cores)", worker.version,
                               String(format: "%.0fs ago", -worker.lastSeen.timeIntervalSinceNow)])
        }
        return "\(workers.count) live workers\n" + table.render()
    }
}

/// JSON as the CLI prints it: snake_case keys, ISO 8601 dates, sorted keys.
enum JSONOutput {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
