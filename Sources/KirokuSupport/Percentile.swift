/// The nearest-rank percentile of values already sorted ascending: the value below which
/// `fraction` of them lie (0 for none).
public func percentile(sorted values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    return values[min(values.count - 1, max(0, Int((Double(values.count) * fraction).rounded(.down))))]
}
