import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Routing weights", .subprocesses)
struct RoutingTests {
    func shares(_ queue: JobQueue) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try queue.connection.query("SELECT pool, count(*) AS n FROM kiroku.jobs GROUP BY pool") {
            counts[try row.string("pool")] = Int(try row.int("n"))
        }
        return counts
    }

    /// Within 5 standard deviations of a binomial draw: fails by chance about once in 3.5 million runs.
    func expectShare(_ count: Int, of total: Int, probability p: Double, _ what: String) {
        let sd = (Double(total) * p * (1 - p)).squareRoot()
        #expect(abs(Double(count) - Double(total) * p) <= 5 * sd, "\(what): \(count) of \(total), expected \(Double(total) * p) ± \(5 * sd)")
    }

    @Test("jobs without a pool follow the weights (functions and plain INSERTs); an explicit pool is kept; no routes means cpu")
    func weights() async throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        #expect(try queue.enqueue(NewJob(image: .inline(fakeJPEG("before")))) > 0)
        #expect(try shares(queue) == ["cpu": 1])

        let set = try await KirokuProcess.run(["route", "set", "cpu=20", "gpu=80"], databaseURL: url)
        #expect(set.status == 0 && set.stdout.contains("gpu   80      80.0%"), "\(set.stdout)\(set.stderr)")
        try queue.connection.execute("DELETE FROM kiroku.jobs")
        _ = try queue.enqueue(batch: (0..<4000).map { NewJob(image: .inline(fakeJPEG("j\($0)"))) })
        _ = try queue.enqueue(batch: (0..<200).map { NewJob(image: .inline(fakeJPEG("e\($0)")), pool: "cpu") })
        var counts = try shares(queue)
        expectShare(counts["gpu", default: 0], of: 4000, probability: 0.8, "enqueue_many")
        #expect(counts["gpu", default: 0] + counts["cpu", default: 0] == 4200, "the 200 with an explicit pool stay in cpu")

        try queue.connection.execute("DELETE FROM kiroku.jobs")
        try queue.connection.execute("INSERT INTO kiroku.jobs (image_uri) SELECT 'https://cdn.example/' || g || '.jpg' FROM generate_series(1, 4000) AS g")
        counts = try shares(queue)
        expectShare(counts["gpu", default: 0], of: 4000, probability: 0.8, "plain INSERT")

        try queue.setRoutes([("cpu", 1), ("gpu", 0)])
        try queue.connection.execute("DELETE FROM kiroku.jobs")
        _ = try queue.enqueue(batch: (0..<100).map { NewJob(image: .inline(fakeJPEG("z\($0)"))) })
        #expect(try shares(queue) == ["cpu": 100])
        #expect(try await KirokuProcess.run(["route", "show"], databaseURL: url).stdout.contains("cpu   1       100.0%"))
    }

    @Test("bad weights say what to fix")
    func usage() async throws {
        let bad = try await KirokuProcess.run(["route", "set", "cpu=x"])
        #expect(bad.status == 2 && bad.stderr.contains("'cpu=x' is not POOL=WEIGHT"))
        let zero = try await KirokuProcess.run(["route", "set", "cpu=0"])
        #expect(zero.status == 2 && zero.stderr.contains("at least one weight must be above 0"))
    }
}
