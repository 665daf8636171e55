import Foundation
import KirokuQueue

/// What the dashboard has read, each part read again only as often as it can change enough to
/// matter, so that an open page costs the queue little however busy it is:
/// - every snapshot: live workers and the latest finished jobs (an index scan of 20 rows);
/// - every `depthInterval`: the depth per pool, the shadow comparison, routes, recommendations;
/// - every `healthInterval`: `kiroku doctor`'s checks;
/// - every `measurementInterval`: the advisor's measurement of each pool (`PoolMeasurement`, its
///   windows), the same typed row the advisor and `kiroku status` read, at the autoscaler's pace;
/// - each minute once it has closed: its finished and failed jobs per pool (a range of the index
///   of finished jobs, read once; the hour is read once at start).
struct DashboardReadings: Sendable {
    /// How often the depth and the slower-moving parts are read again.
    static let depthInterval = Duration.seconds(5), healthInterval = Duration.seconds(30), measurementInterval = Duration.seconds(60)
    /// A minute counts as closed this many seconds after its end (a finish time is its
    /// transaction's start, so its row can appear a little later).
    static let settleSeconds = 5.0

    /// Minutes before this have been read.
    private var closedUntil: Date?
    private var minutes: [PoolMinute] = [], failures: [FailureMinute] = []
    private var slow: Slow?
    private var health: (read: ContinuousClock.Instant, checks: [HealthCheck])?
    private var measured: (read: ContinuousClock.Instant, pools: [PoolMeasurement])?

    /// The parts read every `depthInterval`.
    private struct Slow: Sendable {
        var read: ContinuousClock.Instant
        var depths: [PoolDepth], routes: [(pool: String, weight: Int)], recommendations: [LatestRecommendation]
        var shadow: ShadowComparison
    }

    /// Reads what is due and puts the snapshot together; the cut-over shown is `from` to `to`.
    mutating func snapshot(_ queue: JobQueue, from: String, to: String) throws(PostgresError) -> DashboardSnapshot {
        let now = ContinuousClock.now
        try queue.limitStatements(seconds: 10)
        let (clock, closed) = try queue.minuteBoundary(settle: Self.settleSeconds)
        let hourAgo = closed.addingTimeInterval(-3600)
        let start = max(closedUntil ?? hourAgo, hourAgo)
        if start < closed {
            minutes += try queue.finishedMinutes(from: start, to: closed)
            failures += try queue.failureMinutes(from: start, to: closed)
            closedUntil = closed
            minutes.removeAll { $0.minute < hourAgo }
            failures.removeAll { $0.minute < hourAgo }
        }
        if slow.map({ $0.read.duration(to: now) >= Self.depthInterval }) ?? true {
            slow = Slow(read: now, depths: try queue.poolDepths(), routes: try queue.routes(), recommendations: try queue.latestRecommendations(),
                        shadow: try ShadowComparison.measure(queue.connection, precision: ShadowComparison.defaultPrecision,
                                                             tolerance: ShadowComparison.defaultTolerance))
        }
        if health.map({ $0.read.duration(to: now) >= Self.healthInterval }) ?? true {
            health = (now, try Self.checks(queue))
        }
        let windows = QueueMeasurements()
        if measured.map({ $0.read.duration(to: now) >= Self.measurementInterval }) ?? true {
            measured = (now, try queue.poolMeasurements(shortWindow: windows.shortWindow, longWindow: windows.longWindow, liveness: windows.liveness))
        }
        guard let slow, let health, let measured else { preconditionFailure("read above when missing") }
        return DashboardSnapshot(generatedAt: clock, depths: slow.depths, minutes: minutes, failures: failures, workers: try queue.workerSummaries(),
                                 latest: try queue.latestFinished(), measurements: measured.pools,
                                 windows: (windows.shortWindow, windows.longWindow), recommendations: slow.recommendations, routes: slow.routes, shadow: slow.shadow,
                                 cutover: CutoverStep(from: from, to: to, percents: CutoverPlan.defaultPercents, routes: slow.routes, shadow: slow.shadow),
                                 health: health.checks)
    }

    /// `kiroku doctor`'s checks; one that fails for a reason other than the database's is a warning saying so.
    private static func checks(_ queue: JobQueue) throws(PostgresError) -> [HealthCheck] {
        do {
            return try QueueHealth(connection: queue.connection).run()
        } catch let error as PostgresError {
            throw error
        } catch {
            return [HealthCheck(name: "doctor", verdict: .warn, evidence: "not checked: \(error)", fix: "run kiroku doctor")]
        }
    }
}
