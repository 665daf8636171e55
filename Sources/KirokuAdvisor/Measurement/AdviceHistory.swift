import Foundation
import KirokuQueue

/// Time series for the HTML report, per pool, read from the jobs, the recommendations and the
/// shadow pairs: what happened, next to what the advisor said.
public struct AdviceHistory: Sendable, Equatable {
    /// One point of a series.
    public struct Point: Sendable, Equatable {
        /// When.
        public var at: Date
        /// The value.
        public var value: Double
    }

    /// A named line on a chart.
    public struct Series: Sendable, Equatable {
        /// The legend.
        public var name: String
        /// The points, oldest first.
        public var points: [Point]
    }

    /// Arrivals per second (jobs counted when they came due), per pool.
    public var arrivals: [Series] = []
    /// Jobs due and waiting, per pool.
    public var queueDepth: [Series] = []
    /// Enqueue-to-result p50 in milliseconds, per pool.
    public var latency: [Series] = []
    /// Recommended (published) versus running hosts, per pool.
    public var hosts: [Series] = []
    /// Cumulative top-1 agreement of shadow pairs, percent.
    public var agreement: [Series] = []

    /// Reads at most the last `span` seconds, fitted to the data: from the first job arriving in
    /// it, in about 60 buckets of a round length (1 s to 10 min).
    public static func read(_ connection: PostgresConnection, span limit: Double = 3 * 3600) throws(PostgresError) -> AdviceHistory {
        let age = try JobQueue(connection: connection).historyAge(limit: limit) ?? limit
        let covered = min(limit, max(age, 60))
        let bucket = [1.0, 2, 5, 10, 15, 30, 60, 120, 300, 600].first { covered / $0 <= 90 } ?? 600
        return try read(connection, span: covered + bucket, bucket: bucket)
    }

    /// Reads the last `span` seconds in buckets of `bucket` seconds.
    static func read(_ connection: PostgresConnection, span: Double, bucket: Double) throws(PostgresError) -> AdviceHistory {
        var history = AdviceHistory()
        let queue = JobQueue(connection: connection)
        let rows = try queue.historyRows(span: span, bucket: bucket)
        var byPool: [String: (arrivals: [Point], depth: [Point], latency: [Point])] = [:]
        for row in rows {
            let pool = try row.string("pool"), at = try row.date("at")
            byPool[pool, default: ([], [], [])].arrivals.append(Point(at: at, value: try row.double("arrivals")))
            byPool[pool, default: ([], [], [])].depth.append(Point(at: at, value: try row.double("depth")))
            if let latency = try row.optionalDouble("latency") {
                byPool[pool, default: ([], [], [])].latency.append(Point(at: at, value: latency * 1000))
            }
        }
        for (pool, series) in byPool.sorted(by: { $0.key < $1.key }) {
            history.arrivals.append(Series(name: pool, points: series.arrivals))
            history.queueDepth.append(Series(name: pool, points: series.depth))
            history.latency.append(Series(name: pool + " p50", points: series.latency))
        }
        var recommended: [String: [Point]] = [:], actual: [String: [Point]] = [:]
        for row in try queue.recommendationHistory(span: span) {
            let pool = try row.string("pool"), at = try row.date("made_at")
            recommended[pool, default: []].append(Point(at: at, value: Double(try row.int("stabilised"))))
            if let live = try row.optionalDouble("live") { actual[pool, default: []].append(Point(at: at, value: live)) }
        }
        for pool in recommended.keys.sorted() {
            history.hosts.append(Series(name: pool + " recommended", points: recommended[pool]!))
            history.hosts.append(Series(name: pool + " running", points: actual[pool] ?? []))
        }
        var agreement: [Point] = []
        for row in try queue.agreementHistory(span: span, bucket: bucket) {
            agreement.append(Point(at: try row.date("at"), value: try row.double("rate") * 100))
        }
        if !agreement.isEmpty { history.agreement.append(Series(name: "top-1 agreement, cumulative", points: agreement)) }
        return history
    }
}
