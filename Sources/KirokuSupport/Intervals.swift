/// A share of trials that succeeded, with its Wilson score interval: what the shadow comparison
/// and `kiroku quantize`'s acceptance report (agreement between two models or two pools).
public struct Proportion: Sendable, Equatable, Codable {
    /// Trials, and those that succeeded.
    public var trials: Int, successes: Int
    /// The share (0 without trials) and its interval at the confidence the normal quantile gives.
    public var rate: Double, low: Double, high: Double

    /// `successes` of `trials`, the interval at the normal quantile `z` (1.96: 95%).
    public init(successes: Int, of trials: Int, z: Double = 1.96) {
        (self.trials, self.successes) = (trials, successes)
        rate = trials > 0 ? Double(successes) / Double(trials) : 0
        (low, high) = Self.wilson(successes: successes, trials: trials, z: z)
    }

    /// The Wilson score interval for `successes` of `trials` ((0, 1) without trials).
    public static func wilson(successes: Int, trials: Int, z: Double = 1.96) -> (low: Double, high: Double) {
        guard trials > 0 else { return (0, 1) }
        let n = Double(trials), p = Double(successes) / n, z2 = z * z
        let centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        let half = z * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot() / (1 + z2 / n)
        return (max(0, centre - half), min(1, centre + half))
    }
}

/// The mean of a sample with its 95% confidence interval (Student's t), never below 0 for a
/// sample of values that cannot be negative (a squared difference).
public struct MeanInterval: Sendable, Equatable, Codable {
    /// The sample's size and mean.
    public var count: Int, mean: Double
    /// The interval's ends (the mean itself for fewer than two values).
    public var low: Double, high: Double

    /// The mean of `values` and its interval.
    public init(_ values: [Double]) {
        let mean = values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
        var half = 0.0
        if values.count > 1 {
            let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)
            half = Self.t95(degreesOfFreedom: values.count - 1) * (variance / Double(values.count)).squareRoot()
        }
        let floor = values.allSatisfy { $0 >= 0 } ? 0 : -Double.infinity
        (count, self.mean, low, high) = (values.count, mean, max(floor, mean - half), mean + half)
    }

    /// The two-sided 95% quantile of Student's t: exact to 3 decimals up to 30 degrees of freedom
    /// (a table), then the normal quantile with the Cornish-Fisher correction.
    static func t95(degreesOfFreedom n: Int) -> Double {
        let table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                     2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
        if n <= table.count { return table[max(n, 1) - 1] }
        let z = 1.959964, d = Double(n)
        return z + (z * z * z + z) / (4 * d) + (5 * pow5(z) + 16 * z * z * z + 3 * z) / (96 * d * d)
    }

    private static func pow5(_ x: Double) -> Double { x * x * x * x * x }
}
