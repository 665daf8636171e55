/// Element counts of shapes from untrusted files, checked for overflow and size.
enum ShapeMath {
    /// The largest tensor the engine allocates: 2^28 floats (1 GiB).
    static let maximumElements = 1 << 28

    /// The number of elements, or nil when a dimension is negative or the product of the
    /// non-empty dimensions overflows or exceeds `maximumElements` (an empty axis does not excuse
    /// a huge one: index maps and loops are sized by each axis).
    static func count(_ shape: [Int]) -> Int? {
        var total = 1, empty = false
        for dimension in shape {
            guard dimension >= 0 else { return nil }
            empty = empty || dimension == 0
            let (product, overflow) = total.multipliedReportingOverflow(by: max(dimension, 1))
            guard !overflow, product <= maximumElements else { return nil }
            total = product
        }
        return empty ? 0 : total
    }
}
