import Foundation
import KirokuAdvisor
import KirokuQueue
import KirokuSupport
import KirokuTestSupport
import Testing

@Suite("Shadow comparison", .subprocesses)
struct ShadowTests {
    @Test("Wilson intervals: p = 0 gives [0, z²/(n + z²)]; 50 of 100 gives 0.4038–0.5962")
    func wilson() {
        let none = Proportion.wilson(successes: 0, trials: 10)
        #expect(none.low == 0 && abs(none.high - 3.8416 / 13.8416) < 1e-4)
        let half = Proportion.wilson(successes: 50, trials: 100)
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
            ShadowComparison(fraction: 0.05, poolA: "cpu", poolB: "gpu",
                             summary: ShadowSummary(compared: compared, agreeing: agreeing, decisions: 0, decisionsAgreeing: 0, scoreDifference: 0),
                             pools: [], precision: 0.002, tolerance: 0.01).recommendation
        }
        #expect(compare(0, of: 0).hasPrefix("keep comparing"))
        #expect(compare(99, of: 100).hasPrefix("keep comparing"))
        #expect(compare(20_000, of: 20_000).hasPrefix("cut over"))
        #expect(compare(9_000, of: 10_000).hasPrefix("do not cut over"))
    }

    /// Shadow pairs written as a worker and a legacy service would: `pairs` jobs in cpu, each
    /// duplicated to gpu; gpu's answer differs on top-1 for the first `tiesFlipped` (a near-tie: the
    /// verdict stays) and on the verdict for the first `verdictsFlipped`.
    static func pairs(_ url: String, pairs: Int, tiesFlipped: Int, verdictsFlipped: Int) async throws {
        #expect(try await KirokuProcess.run(["shadow", "set", "100%", "--pools", "cpu,gpu"], databaseURL: url).status == 0)
        let queue = JobQueue(connection: try PostgresConnection(url))
        for index in 0..<pairs { _ = try queue.enqueue(NewJob(image: .inline(fakeJPEG("p\(index)")), pool: "cpu")) }
        func result(top: Int, food: Bool, decode: String) -> String {
            #"{"top": [{"index": \#(top), "label": "l", "score": 0.41}], "food": \#(food), "food_score": \#(food ? 0.9 : 0.1), "model": {"name": "m"}, "decode": "\#(decode)"}"#
        }
        for job in try queue.claim(workerID: "kiroku-1", pool: "cpu", maxJobs: pairs, lease: .seconds(60)) {
            #expect(try queue.complete(job.lease, resultJSON: result(top: 7, food: true, decode: "reduced")))
        }
        for (index, job) in try queue.claim(workerID: "legacy-1", pool: "gpu", maxJobs: pairs, lease: .seconds(60))
            .sorted(by: { $0.lease.id < $1.lease.id }).enumerated() {
            #expect(try queue.complete(job.lease, resultJSON: result(top: index < tiesFlipped ? 8 : 7, food: index >= verdictsFlipped,
                                                                     decode: "full")))
        }
    }

    @Test("the gate judges the decision by default: a legacy pool differing on near-ties only is not held back, one whose verdicts differ is")
    func decisionGate() async throws {
        func show(_ url: String, _ extra: [String] = []) async throws -> [String: Any] {
            let run = try await KirokuProcess.run(["shadow", "show", "--json", "--precision", "5%", "--tolerance", "10%"] + extra, databaseURL: url)
            #expect(run.status == 0, "\(run.stderr)")
            return try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] ?? [:]
        }
        // Near-ties: 10 of 40 top-1 labels differ (75% agreement), every verdict agrees.
        let ties = try TestDatabase.create()
        try await Self.pairs(ties, pairs: 40, tiesFlipped: 10, verdictsFlipped: 0)
        let onDecision = try await show(ties)
        #expect(onDecision["gate"] as? String == "decision")
        #expect((onDecision["decision"] as? [String: Any])?["successes"] as? Int == 40)
        #expect((onDecision["top1"] as? [String: Any])?["successes"] as? Int == 30)
        #expect((onDecision["recommendation"] as? String)?.hasPrefix("cut over: the pools agree on the decision") == true, "\(onDecision)")
        let warnings = onDecision["warnings"] as? [String] ?? []
        #expect(warnings.count == 1 && warnings[0].contains("cpu: reduced") && warnings[0].contains("gpu: full"), "\(warnings)")
        let onTop1 = try await show(ties, ["--gate", "top1"])
        #expect((onTop1["recommendation"] as? String)?.hasPrefix("do not cut over: the pools disagree on top-1") == true, "\(onTop1)")
        let text = try await KirokuProcess.run(["shadow", "show", "--precision", "5%", "--tolerance", "10%"], databaseURL: ties).stdout
        #expect(text.contains("pool gpu: 40 results, decode full") && text.contains("warning: the pools decode differently"), "\(text)")

        // Verdicts differ on 10 of 40: the decision gate holds the move.
        let verdicts = try TestDatabase.create()
        try await Self.pairs(verdicts, pairs: 40, tiesFlipped: 0, verdictsFlipped: 10)
        let held = try await show(verdicts)
        #expect((held["recommendation"] as? String)?.hasPrefix("do not cut over: the pools disagree on the decision") == true, "\(held)")
        let plan = try await KirokuProcess.run(["advise", "--plan", "--from", "gpu", "--from-type", "g4dn.xlarge", "--catalog",
                                                SizingRuleTests.root.appendingPathComponent("catalog/instances.json").path], databaseURL: verdicts)
        #expect(plan.stdout.contains("shadow comparison: do not cut over: the pools disagree on the decision")
                && plan.stdout.contains("decision 75.00%"), "\(plan.stdout)\(plan.stderr)")
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
            let lock = TestScratch.path("shadow-\(pool)", suffix: ".lock")
            let run = try await KirokuProcess.run(["worker", "--once", "--pool", pool, "--http-port", "0", "--lock-file", lock, "--model", model],
                                            databaseURL: url)
            #expect(run.status == 0, "\(run.stderr)")
        }
        let show = try await KirokuProcess.run(["shadow", "show", "--json", "--precision", "5%"], databaseURL: url)
        let report = try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any] ?? [:]
        let top1 = report["top1"] as? [String: Any] ?? [:], decision = report["decision"] as? [String: Any] ?? [:]
        #expect(top1["trials"] as? Int == duplicates && top1["successes"] as? Int == duplicates, "\(show.stdout)\(show.stderr)")
        #expect(decision["trials"] as? Int == duplicates && decision["successes"] as? Int == duplicates)
        let pools = report["pools"] as? [[String: Any]] ?? []
        #expect(pools.map { $0["pool"] as? String } == ["cpu", "gpu"] && pools.allSatisfy { $0["decode_modes"] as? [String] == ["reduced"] })
        #expect((report["warnings"] as? [String])?.isEmpty == true)
        let originalsInCPU = try connection.query(
            "SELECT count(*) AS n FROM kiroku.jobs WHERE shadow_of IS NULL AND state = 'succeeded' AND result ->> 'pool' = 'cpu'").single("n").int("n")
        #expect(originalsInCPU == Int64(originals))
        let text = try await KirokuProcess.run(["shadow", "show"], databaseURL: url).stdout
        #expect(text.contains("top-1 100.00%") && text.contains("shadowing: 50% of new jobs between cpu and gpu"), "\(text)")
    }
}
