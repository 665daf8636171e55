/// How calibration turns the values a tensor took into the range its 8 bits cover.
public enum CalibrationMethod: Sendable, Equatable {
    /// From the smallest to the largest value seen.
    case minMax
    /// The range that leaves out (100 − p)% of the values seen at each end: rare outliers are
    /// clipped so the common values get finer steps.
    case percentile(Double)
}

/// What calibration saw of one tensor: its extremes and a histogram of its values in two halves
/// of `bins` bins, over [−limit, 0) and [0, limit]. When a value falls beyond the limit, the limit
/// doubles and neighbouring bins merge, so one pass over the images suffices.
struct ValueHistogram: Sendable {
    static let bins = 2048
    private(set) var minimum = Float.infinity, maximum = -Float.infinity
    /// The finite values seen.
    private(set) var count = 0
    private var limit: Float = 0
    private var negative = [Int](repeating: 0, count: bins), positive = [Int](repeating: 0, count: bins)

    /// Adds values; infinities and NaNs are not counted.
    mutating func add(_ values: UnsafeBufferPointer<Float>) {
        var low = minimum, high = maximum
        for value in values where value.isFinite {
            low = Swift.min(low, value)
            high = Swift.max(high, value)
        }
        guard low <= high else { return }
        (minimum, maximum) = (low, high)
        let extent = Swift.max(-low, high)
        if limit == 0 { limit = max(extent, 1e-30) }  // bins of a width Float can divide by
        while extent > limit { widen() }
        let perBin = Float(Self.bins) / limit, last = Self.bins - 1
        for value in values where value.isFinite {
            let bin = Swift.min(Int(abs(value) * perBin), last)
            if value < 0 { negative[bin] &+= 1 } else { positive[bin] &+= 1 }
            count &+= 1
        }
    }

    /// Doubles the limit: bins 2i and 2i + 1 of each half become bin i.
    private mutating func widen() {
        for i in 0..<(Self.bins / 2) {
            negative[i] = negative[2 * i] + negative[2 * i + 1]
            positive[i] = positive[2 * i] + positive[2 * i + 1]
        }
        for i in (Self.bins / 2)..<Self.bins { (negative[i], positive[i]) = (0, 0) }
        limit *= 2
    }

    /// The range `method` keeps (nil before any value was seen). A percentile's bounds are the
    /// outer edges of the bins where the clipped tails end, never beyond the extremes seen.
    func range(_ method: CalibrationMethod) -> ClosedRange<Float>? {
        guard count > 0 else { return nil }
        guard case .percentile(let percent) = method else { return minimum...maximum }
        let tail = Int((Double(count) * (100 - percent) / 100).rounded(.down))
        let width = limit / Float(Self.bins)
        func edge(_ half: [Int]) -> Float {
            var clipped = 0
            for bin in stride(from: Self.bins - 1, through: 0, by: -1) {
                clipped += half[bin]
                if clipped > tail { return Float(bin + 1) * width }
            }
            return 0
        }
        let high = Swift.min(maximum, Swift.max(edge(positive), minimum))
        let low = Swift.max(minimum, Swift.min(-edge(negative), high))
        return low...high
    }
}
