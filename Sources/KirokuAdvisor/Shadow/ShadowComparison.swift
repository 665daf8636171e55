import Foundation
import KirokuQueue
import KirokuSupport

/// The comparison of the two pools on the same images (kiroku.shadow_pairs): agreement on the
/// product's decision (the sidecar's food verdict) and on top-1, each with a Wilson confidence
/// interval, score and latency differences, each pool's decode mode, how many more comparisons the
/// configured precision needs, and whether to cut over, judged on the measure the operator names.
public struct ShadowComparison: Sendable, Equatable, Codable {
    /// What the cut-over gate judges: the decision the product consumes, or the top-1 label.
    public enum Measure: String, Sendable, Codable, CaseIterable {
        /// The sidecar's decision (food or not), over the pairs whose results both carry one.
        case decision
        /// The top-1 class.
        case top1
    }

    /// The sampling as configured (nil: off).
    public var fraction: Double?, poolA: String?, poolB: String?
    /// Agreement on top-1 over every compared pair (both jobs succeeded).
    public var top1: Proportion
    /// Agreement on the decision over the pairs whose results both carry one (nil: none does).
    public var decision: Proportion?
    /// The measure the recommendation judges.
    public var gate: Measure
    /// The confidence level of the intervals (e.g. 0.95).
    public var confidence: Double
    /// Mean |top-1 score difference| between the two results.
    public var meanScoreDifference: Double?
    /// Each pool's side: results, mean seconds from claim to result, decode modes.
    public var pools: [ShadowPool]
    /// The half-width the disagreement rate should be known to, and the tolerated disagreement.
    public var precision: Double, tolerance: Double
    /// Comparisons still needed for `precision` on the gate's measure (0 when there are enough).
    public var moreNeeded: Int
    /// "cut over", "keep comparing" or "do not cut over", with the reason.
    public var recommendation: String
    /// What may make the comparison say less than it seems (the pools decode differently).
    public var warnings: [String]

    /// The half-width and the tolerated disagreement `kiroku shadow show` and the cut-over plan use unless told.
    public static let defaultPrecision = 0.001, defaultTolerance = 0.01

    /// Reads the configuration and the pairs and compares; `gate` nil judges the decision when the
    /// results carry one, else top-1.
    public static func measure(_ connection: PostgresConnection, precision: Double, tolerance: Double, gate: Measure? = nil,
                               confidence: Double = 0.95) throws(PostgresError) -> ShadowComparison {
        let queue = JobQueue(connection: connection)
        let settings = try queue.shadowSettings()
        return ShadowComparison(fraction: settings?.fraction, poolA: settings?.poolA, poolB: settings?.poolB, summary: try queue.shadowSummary(),
                                pools: try queue.shadowPools(), precision: precision, tolerance: tolerance, gate: gate, confidence: confidence)
    }

    /// Compares from counts.
    public init(fraction: Double?, poolA: String?, poolB: String?, summary: ShadowSummary, pools: [ShadowPool],
                precision: Double, tolerance: Double, gate: Measure? = nil, confidence: Double = 0.95) {
        (self.fraction, self.poolA, self.poolB) = (fraction, poolA, poolB)
        (self.precision, self.tolerance, self.confidence) = (precision, tolerance, confidence)
        meanScoreDifference = summary.scoreDifference
        self.pools = pools
        let z = Self.z(confidence)
        top1 = Proportion(successes: summary.agreeing, of: summary.compared, z: z)
        decision = summary.decisions > 0 ? Proportion(successes: summary.decisionsAgreeing, of: summary.decisions, z: z) : nil
        self.gate = gate ?? (decision != nil ? .decision : .top1)
        let judged = self.gate == .decision ? decision ?? Proportion(successes: 0, of: 0, z: z) : top1
        let what = self.gate == .decision ? "the decision" : "top-1"
        let disagreement = 1 - judged.rate
        moreNeeded = max(0, Self.trialsNeeded(rate: disagreement, halfWidth: precision, z: z) - judged.trials)
        let worst = 1 - judged.low, best = 1 - judged.high
        if judged.trials == 0 {
            recommendation = self.gate == .decision && summary.compared > 0
                ? "keep comparing: no compared pair carries a decision in both results (judge top-1 with --gate top1)"
                : "keep comparing: no pair has been compared yet"
        } else if best > tolerance {
            recommendation = String(format: "do not cut over: the pools disagree on %@ in %.2f%% of %d jobs, at least %.2f%% at %.0f%% confidence, above the %.2f%% tolerated",
                                    what, disagreement * 100, judged.trials, best * 100, confidence * 100, tolerance * 100)
        } else if moreNeeded > 0 || worst > tolerance {
            recommendation = String(format: "keep comparing: %d more compared jobs to know the disagreement on %@ (%.2f%% so far, at most %.2f%%) to ±%.2f%%",
                                    max(moreNeeded, 1), what, disagreement * 100, worst * 100, precision * 100)
        } else {
            recommendation = String(format: "cut over: the pools agree on %@ in %.2f%% of %d jobs; disagreement at most %.2f%% at %.0f%% confidence (tolerated %.2f%%)",
                                    what, judged.rate * 100, judged.trials, worst * 100, confidence * 100, tolerance * 100)
        }
        let modes = Set(pools.map { $0.decodeModes.sorted() })
        warnings = modes.count > 1
            ? ["the pools decode differently (" + pools.map { "\($0.pool): \($0.decodeModes.joined(separator: "/"))" }.joined(separator: ", ")
               + "): part of the top-1 disagreement is the preprocessing, not the model; run the worker with --decode full to compare models alone"]
            : []
    }

    /// Both measures in a line: "decision 100.00% (97.10–100.00%), top-1 91.43% (...) over 35 pairs at 95% confidence".
    public var agreementText: String {
        func text(_ name: String, _ a: Proportion) -> String {
            String(format: "%@ %.2f%% (%.2f–%.2f%%) of %d", name, a.rate * 100, a.low * 100, a.high * 100, a.trials)
        }
        return ([decision.map { text("decision", $0) }, text("top-1", top1)].compactMap { $0 }).joined(separator: ", ")
            + String(format: " pairs agree at %.0f%% confidence; the gate judges %@", confidence * 100, gate == .decision ? "the decision" : "top-1")
    }

    /// The normal quantile for a two-sided confidence level (0.90, 0.95, 0.99; else 1.96).
    static func z(_ confidence: Double) -> Double {
        switch confidence {
        case 0.90: 1.6449
        case 0.99: 2.5758
        default: 1.9600
        }
    }

    /// The fewest trials whose Wilson interval around `rate` is at most ±`halfWidth`.
    public static func trialsNeeded(rate: Double, halfWidth: Double, z: Double = 1.96) -> Int {
        func width(_ n: Int) -> Double {
            let interval = Proportion.wilson(successes: Int((rate * Double(n)).rounded()), trials: n, z: z)
            return (interval.high - interval.low) / 2
        }
        var high = 1
        while width(high) > halfWidth && high < 1 << 40 { high *= 2 }
        var low = max(1, high / 2)
        while low < high {
            let middle = (low + high) / 2
            if width(middle) > halfWidth { low = middle + 1 } else { high = middle }
        }
        return high
    }
}
