import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku status`: queue depth per pool and state (the measurement the advisor and the dashboard read), recent throughput, live workers.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show queue depth per pool and state, recent throughput and live workers.")

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() throws {
        let report = try QueueStatusReport.read(try database.queue())
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
        /// Queue-wait percentiles over the last hour, seconds.
        var waitP50Seconds: Double?
        var waitP95Seconds: Double?
        /// Workers seen in the last two minutes (registered or not).
        var liveWorkers = 0
    }

    var pools: [Pool]
    var workers: [LiveWorker]
    /// The `kiroku doctor` checks that failed.
    var failedChecks: [HealthCheck]

    /// Reads the views and tables behind the report.
    static func read(_ queue: JobQueue) throws -> QueueStatusReport {
        var pools: [String: Pool] = [:]
        for (name, state, count) in try queue.jobCounts() {
            var pool = pools[name] ?? Pool(pool: name)
            switch JobState(rawValue: state) {
            case .scheduled, .queued: pool.queued += count
            case .running: pool.running = count
            case .succeeded: pool.succeeded = count
            case .failed: pool.failed = count
            case .cancelled: pool.cancelled = count
            case nil: break
            }
            pools[name] = pool
        }
        for measured in try queue.poolMeasurements(shortWindow: 300, longWindow: 3600, liveness: 120) {
            var pool = pools[measured.pool] ?? Pool(pool: measured.pool)
            (pool.ready, pool.scheduled, pool.nextDueAt) = (measured.ready, measured.scheduled, measured.nextDueAt)
            (pool.dueWithinHour, pool.oldestQueuedAgeSeconds) = (measured.dueWithinHour, measured.oldestQueuedAge)
            (pool.waitP50Seconds, pool.waitP95Seconds, pool.liveWorkers) = (measured.waitP50, measured.waitP95, measured.liveWorkers)
            pools[measured.pool] = pool
        }
        for recent in try queue.recentThroughput() {
            pools[recent.pool]?.finishedLastFiveMinutes = recent.finished
            pools[recent.pool]?.jobsPerSecond = recent.jobsPerSecond
            pools[recent.pool]?.meanServiceSeconds = recent.meanServiceSeconds
            pools[recent.pool]?.meanWaitSeconds = recent.meanWaitSeconds
        }
        let failed = try QueueHealth(connection: queue.connection).run().filter { $0.verdict == .fail }
        return QueueStatusReport(pools: pools.values.sorted { $0.pool < $1.pool }, workers: try queue.liveWorkers(), failedChecks: failed)
    }

    /// The report for a terminal.
    var text: String {
        queueText + (failedChecks.isEmpty ? "" : "\n\nwarning: " + failedChecks.map { "\($0.name): \($0.evidence)" }.joined(separator: "; ")
            + " (kiroku doctor has the fixes)")
    }

    private var queueText: String {
        guard !pools.isEmpty else { return "no jobs\n\(workersText)" }
        var table = TextTable(header: ["POOL", "READY", "SCHEDULED", "NEXT DUE", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "OLDEST WAIT",
                                       "WAIT P50/P95 (1h)", "JOBS/S (5m)", "SERVICE", "HOSTS"])
        for pool in pools {
            table.rows.append([
                pool.pool, "\(pool.ready)", "\(pool.scheduled)", pool.nextDueAt.map(Self.dueText) ?? "-", "\(pool.running)",
                "\(pool.succeeded)", "\(pool.failed)",
                "\(pool.cancelled)", String(format: "%.1fs", pool.oldestQueuedAgeSeconds),
                [pool.waitP50Seconds, pool.waitP95Seconds].map { $0.map { String(format: "%.2fs", $0) } ?? "-" }.joined(separator: "/"),
                String(format: "%.2f", pool.jobsPerSecond),
                pool.meanServiceSeconds.map { String(format: "%.0fms", $0 * 1000) } ?? "-", "\(pool.liveWorkers)",
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
