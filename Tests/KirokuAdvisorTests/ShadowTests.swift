import Foundation
import KirokuAdvisor
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Shadow comparison", .subprocesses)
struct ShadowTests {
    @Test("Wilson intervals: p = 0 gives [0, z²/(n + z²)]; 50 of 100 gives 0.4038–0.5962")
    func wilson() {
        let none = ShadowComparison.wilson(successes: 0, trials: 10)
        #expect(none.low == 0 && abs(none.high - 3.8416 / 13.8416) < 1e-4)
        let half = ShadowComparison.wilson(successes: 50, trials: 100)
        #expect(abs(half.low - 0.4038) < 1e-4 && abs(half.high - 0.5962) < 1e-4)
    }

    @Test("about 19,000 compared jobs pin a 0.5% disagreement rate to ±0.1%")
    func trialsNeeded() {
        let needed = ShadowComparison.trialsNeeded(rate: 0.005, halfWidth: 0.001)
        #expect((18_000...20_500).contains(needed), "\(needed)")
    }

    @Test("the recommendation: keep comparing, cut over, or not")
    func recommendation() {
        func compare(_ agreeing: Int, of compared: Int) -> String {
            ShadowComparison(fraction: 0.05, poolA: "cpu", poolB: "gpu", compared: compared, agreeing: agreeing, meanScoreDifference: 0,
                             meanSecondsByPool: [:], precision: 0.002, tolerance: 0.01).recommendation
        }
        #expect(compare(0, of: 0).hasPrefix("keep comparing"))
        #expect(compare(99, of: 100).hasPrefix("keep comparing"))
        #expect(compare(20_000, of: 20_000).hasPrefix("cut over"))
        #expect(compare(9_000, of: 10_000).hasPrefix("do not cut over"))
    }

    @Test("a sample of new jobs is duplicated to the other pool; two workers play the pools; the pairs are compared and the originals keep their results")
    func endToEnd() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let root = SizingRuleTests.root
        let photos = root.appendingPathComponent(".kiroku/vision-fixtures/photos").path
        let model = root.appendingPathComponent("models/efficientnet-lite0.onnx").path
        #expect(try await KirokuProcess.run(["shadow", "set", "50%", "--pools", "cpu,gpu"], databaseURL: url).status == 0)
        for _ in 0..<2 {
            #expect(try await KirokuProcess.run(["enqueue", "--no-idempotency-key", "--pool", "cpu", photos], databaseURL: url).status == 0)
        }
        let counts = try connection.query("""
            SELECT count(*) FILTER (WHERE shadow_of IS NULL) AS originals,
                   count(*) FILTER (WHERE shadow_of IS NOT NULL AND pool = 'gpu') AS duplicates,
                   count(*) FILTER (WHERE shadow_of IS NOT NULL AND NOT image_inline) AS without_image
            FROM kiroku.jobs
            """).single("counts")
        let (originals, duplicates) = (Int(try counts.int("originals")), Int(try counts.int("duplicates")))
        #expect(originals == 34 && duplicates > 0 && duplicates < originals, "\(duplicates) of \(originals)")
        #expect(try counts.int("without_image") == 0)

        for pool in ["cpu", "gpu"] {
            let lock = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-shadow-\(pool)-\(UUID().uuidString.prefix(6)).lock").path
            let run = try await KirokuProcess.run(["worker", "--once", "--pool", pool, "--http-port", "0", "--lock-file", lock, "--model", model],
                                            databaseURL: url)
            #expect(run.status == 0, "\(run.stderr)")
        }
        let show = try await KirokuProcess.run(["shadow", "show", "--json", "--precision", "5%"], databaseURL: url)
        let report = try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(report["compared"] as? Int == duplicates && report["agreeing"] as? Int == duplicates, "\(show.stdout)\(show.stderr)")
        #expect(Set((report["mean_seconds_by_pool"] as? [String: Double] ?? [:]).keys) == ["cpu", "gpu"])
        let originalsInCPU = try connection.query(
            "SELECT count(*) AS n FROM kiroku.jobs WHERE shadow_of IS NULL AND state = 'succeeded' AND result ->> 'pool' = 'cpu'").single("n").int("n")
        #expect(originalsInCPU == Int64(originals))
        let text = try await KirokuProcess.run(["shadow", "show"], databaseURL: url).stdout
        #expect(text.contains("top-1 agreement 100.00%") && text.contains("shadowing: 50% of new jobs between cpu and gpu"), "\(text)")
    }
}
