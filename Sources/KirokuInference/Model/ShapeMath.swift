/// Element counts of shapes from untrusted files, checked for overflow and size.
enum ShapeMath {
    /// The largest tensor the engine allocates: 2^28 floats (1 GiB).
    static let maximumElements = 1 << 28

    /// The number of elements, or nil when a dimension is negative or the count overflows or
    /// exceeds `maximumElements`.
    static func count(_ shape: [Int]) -> Int? {
        var total = 1
        for dimension in shape {
            guard dimension >= 0 else { return nil }
            let (product, overflow) = total.multipliedReportingOverflow(by: dimension)
            guard !overflow, product <= maximumElements else { return nil }
            total = product
        }
        return total
    }
}
