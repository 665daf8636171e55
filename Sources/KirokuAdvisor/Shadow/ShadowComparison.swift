import Foundation
import KirokuQueue

/// The comparison of the two pools on the same images (kiroku.shadow_pairs): top-1 agreement
/// with a Wilson confidence interval, score and latency differences, how many more comparisons
/// the configured precision needs, and whether to cut over.
public struct ShadowComparison: Sendable, Equatable, Codable {
    /// The sampling as configured (nil: off).
    public var fraction: Double?, poolA: String?, poolB: String?
    /// Compared pairs (both jobs succeeded).
    public var compared: Int
    /// Pairs whose top-1 labels agree.
    public var agreeing: Int
    /// The agreement rate and its Wilson interval at `confidence`.
    public var agreement: Double, agreementLow: Double, agreementHigh: Double
    /// The confidence level of the interval (e.g. 0.95).
    public var confidence: Double
    /// Mean |top-1 score difference| between the two results.
    public var meanScoreDifference: Double?
    /// Mean seconds from claim to result, by pool.
    public var meanSecondsByPool: [String: Double]
    /// The half-width the disagreement rate should be known to, and the tolerated disagreement.
    public var precision: Double, tolerance: Double
    /// Comparisons still needed for `precision` (0 when there are enough).
    public var moreNeeded: Int
    /// "cut over", "keep comparing" or "do not cut over", with the reason.
    public var recommendation: String

    /// The half-width and the tolerated disagreement `kiroku shadow show` and the cut-over plan use unless told.
    public static let defaultPrecision = 0.001, defaultTolerance = 0.01

    /// Reads the configuration and the pairs and compares.
    public static func measure(_ connection: PostgresConnection, precision: Double, tolerance: Double,
                               confidence: Double = 0.95) throws(PostgresError) -> ShadowComparison {
        let queue = JobQueue(connection: connection)
        let settings = try queue.shadowSettings()
        let (fraction, poolA, poolB) = (settings?.fraction, settings?.poolA, settings?.poolB)
        let summary = try queue.shadowSummary()
        let seconds = try queue.shadowSecondsByPool()
        return ShadowComparison(fraction: fraction, poolA: poolA, poolB: poolB, compared: summary.compared,
                                agreeing: summary.agreeing, meanScoreDifference: summary.scoreDifference,
                                meanSecondsByPool: seconds, precision: precision, tolerance: tolerance, confidence: confidence)
    }

    /// Compares from counts.
    public init(fraction: Double?, poolA: String?, poolB: String?, compared: Int, agreeing: Int, meanScoreDifference: Double?,
                meanSecondsByPool: [String: Double], precision: Double, tolerance: Double, confidence: Double = 0.95) {
        self.fraction = fraction
        self.poolA = poolA
        self.poolB = poolB
        self.compared = compared
        self.agreeing = agreeing
        self.meanScoreDifference = meanScoreDifference
        self.meanSecondsByPool = meanSecondsByPool
        self.precision = precision
        self.tolerance = tolerance
        self.confidence = confidence
        let z = Self.z(confidence)
        agreement = compared > 0 ? Double(agreeing) / Double(compared) : 0
        let interval = Self.wilson(successes: agreeing, trials: compared, z: z)
        (agreementLow, agreementHigh) = interval
        let disagreement = 1 - agreement
        moreNeeded = max(0, Self.trialsNeeded(rate: disagreement, halfWidth: precision, z: z) - compared)
        let worst = 1 - agreementLow, best = 1 - agreementHigh
        if compared == 0 {
            recommendation = "keep comparing: no pair has been compared yet"
        } else if best > tolerance {
            recommendation = String(format: "do not cut over: the pools disagree on top-1 in %.2f%% of %d jobs, at least %.2f%% at %.0f%% confidence, above the %.2f%% tolerated",
                                    disagreement * 100, compared, best * 100, confidence * 100, tolerance * 100)
        } else if moreNeeded > 0 || worst > tolerance {
            recommendation = String(format: "keep comparing: %d more compared jobs to know the disagreement (%.2f%% so far, at most %.2f%%) to ±%.2f%%",
                                    max(moreNeeded, 1), disagreement * 100, worst * 100, precision * 100)
        } else {
            recommendation = String(format: "cut over: the pools agree on top-1 in %.2f%% of %d jobs; disagreement at most %.2f%% at %.0f%% confidence (tolerated %.2f%%)",
                                    agreement * 100, compared, worst * 100, confidence * 100, tolerance * 100)
        }
    }

    /// The normal quantile for a two-sided confidence level (0.90, 0.95, 0.99; else 1.96).
    static func z(_ confidence: Double) -> Double {
        switch confidence {
        case 0.90: 1.6449
        case 0.99: 2.5758
        default: 1.9600
        }
    }

    /// The Wilson score interval for `successes` of `trials`.
    public static func wilson(successes: Int, trials: Int, z: Double = 1.96) -> (low: Double, high: Double) {
        guard trials > 0 else { return (0, 1) }
        let n = Double(trials), p = Double(successes) / n, z2 = z * z
        let centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        let half = z * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot() / (1 + z2 / n)
        return (max(0, centre - half), min(1, centre + half))
    }

    /// The fewest trials whose Wilson interval around `rate` is at most ±`halfWidth`.
    public static func trialsNeeded(rate: Double, halfWidth: Double, z: Double = 1.96) -> Int {
        func width(_ n: Int) -> Double {
            let interval = wilson(successes: Int((rate * Double(n)).rounded()), trials: n, z: z)
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
