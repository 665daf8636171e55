import Foundation
import KirokuEndpoints
import KirokuQueue
import KirokuSupport
import Logging

/// `kiroku dashboard`'s content: the page and `/api/dashboard`, read through one database link.
/// However many browsers and scripts poll, a snapshot is put together at most twice a second (one
/// younger than half a second is served again), each part read only as often as
/// `DashboardReadings` says.
public final class Dashboard: Sendable {
    private let link: DatabaseLink
    private let from: String, to: String
    private let logger: Logger
    private let readings = SharedValue(DashboardReadings())
    private let cached = SharedValue<(at: ContinuousClock.Instant, snapshot: DashboardSnapshot)?>(nil)

    /// How long a snapshot is served again.
    static let maximumAge = Duration.milliseconds(500)

    /// Opens the link now (a wrong URL or password fails here); the cut-over shown is `from` to `to`.
    public init(connectionString: String, from: String, to: String, logger: Logger) throws {
        link = try DatabaseLink(role: "dashboard", connectionString: connectionString, logger: logger)
        (self.from, self.to, self.logger) = (from, to, logger)
    }

    /// The current snapshot; a failed read is logged and thrown.
    public func snapshot() async throws -> DashboardSnapshot {
        do {
            return try await link.run { [readings, cached, from, to] queue throws(PostgresError) in
                if let hit = cached.value, hit.at.duration(to: .now) < Self.maximumAge { return hit.snapshot }
                var current = readings.value
                let snapshot = try current.snapshot(queue, from: from, to: to)
                readings.withLock { $0 = current }
                cached.withLock { $0 = (.now, snapshot) }
                return snapshot
            }
        } catch {
            logger.error("dashboard read failed", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// The site's routes: the page, its stylesheet and script, and the JSON API.
    public var pages: [SitePage] {
        let utf8 = "; charset=utf-8"
        return [
            SitePage(path: "", contentType: "text/html" + utf8) { Array(DashboardPage.html.utf8) },
            SitePage(path: "dashboard.css", contentType: "text/css" + utf8) { Array(DashboardPage.css.utf8) },
            SitePage(path: "dashboard.js", contentType: "text/javascript" + utf8) { Array(DashboardPage.script.utf8) },
            SitePage(path: "api/dashboard", contentType: "application/json" + utf8) { [self] in
                Array(try AdviceReport.json(try await snapshot()).utf8)
            },
        ]
    }
}
