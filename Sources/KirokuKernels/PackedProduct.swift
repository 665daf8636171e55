#if KIROKU_AVX2
/// A matrix product by a matrix known at load (a transformer's linear layers, ConvNeXt's pointwise
/// ones), its columns packed once into panels of 16: output = clamp(A · B + bias). Six rows of A
/// (eight in the AVX-512 build) by one panel at a time in DirectConvolution's register sums, A's
/// floats broadcast from where its rows lie (nothing packed per call, where sgemm packs both
/// operands on every call). Only in the AVX2 builds, as DirectConvolution.
public enum PackedProduct {
    /// Columns of one panel: packed[(p * depth + k) * 16 + c] = B[k, 16p + c], zero past the last column.
    public static let panelColumns = 16
    /// Most depth one pass adds: a panel's slice of a pass (16 KB) stays in the L1 cache while
    /// every tile of a band of rows runs over it; later passes add to what the earlier ones stored.
    static let passDepth = 256
    /// Rows of A in a band: their slice of a pass (240 KB) stays in the L2 cache while every panel
    /// runs over it (a transformer's 197 tokens are one band: B is read once per pass).
    static let bandRows = 240

    /// For r in `rows`, p in `panels` and c < 16 with 16p + c < `columns`:
    /// output[r * outputStride + 16p + c] = clamp(bias[16p + c] (0 without a bias)
    /// + the sum over k < depth of a[r * aStride + k] * packed[(p * depth + k) * 16 + c], bounds).
    public static func multiply(_ a: UnsafePointer<Float>, aStride: Int, depth: Int, packed: UnsafePointer<Float>, columns: Int,
                                rows: Range<Int>, panels: Range<Int>, bias: UnsafePointer<Float>?, bounds: ClosedRange<Float>,
                                output: UnsafeMutablePointer<Float>, outputStride: Int) {
        let limits = (low: Sixteen(repeating: bounds.lowerBound), high: Sixteen(repeating: bounds.upperBound))
        let passes = max(1, (depth + passDepth - 1) / passDepth), chunk = max(1, (depth + passes - 1) / passes)
        for k0 in stride(from: 0, to: depth, by: chunk) {
            let pass = Pass(depth: min(chunk, depth &- k0), first: k0 == 0, last: k0 &+ chunk >= depth)
            for m0 in stride(from: rows.lowerBound, to: rows.upperBound, by: bandRows) {
                let bandEnd = min(rows.upperBound, m0 &+ bandRows)
                var done = panels.lowerBound  // panels before it computed (the AVX-512 build takes two at once)
                for p in panels where p >= done {
                    done = p &+ 1
                    let column = p &* panelColumns, valid = min(panelColumns, columns &- column)
                    let panel = packed + (p &* depth &+ k0) &* panelColumns
                    // Tiles of as even a size as `Sums.rows` rows at most allow (49 rows in tiles of 6 as 4 of
                    // 6 and 5 of 5, not 8 of 6 and one row, whose sums wait on each other's latency).
                    let most = DirectConvolution.Sums.rows
                    let count = bandEnd &- m0, tiles = (count &+ most &- 1) / most, size = count / tiles, larger = count % tiles
                    #if KIROKU_AVX512
                    // Tiles of 7 and 8 rows by this panel and the next at once (16 sums).
                    if p &+ 1 < panels.upperBound, size >= 7 {
                        let next = column &+ panelColumns, nextValid = min(panelColumns, columns &- next)
                        var r = m0
                        for t in 0..<tiles {
                            let height = t < larger ? size &+ 1 : size, rowA = a + (r &* aStride &+ k0), out = output + r &* outputStride
                            var sums = startSums(pass: pass, rows: height, valid: valid, bias: bias.map { $0 + column }, output: out + column,
                                                 outputStride: outputStride)
                            var more = startSums(pass: pass, rows: height, valid: nextValid, bias: bias.map { $0 + next },
                                                 output: out + next, outputStride: outputStride)
                            if height == 8 {
                                sums.accumulate(broadcasting: rowA, times: panel, alongside: &more, otherVectors: panel + depth &* panelColumns,
                                                depth: pass.depth, rows: 8, rowStride: aStride)
                            } else {
                                sums.accumulate(broadcasting: rowA, times: panel, alongside: &more, otherVectors: panel + depth &* panelColumns,
                                                depth: pass.depth, rows: 7, rowStride: aStride)
                            }
                            finish(sums, pass: pass, rows: height, valid: valid, limits: limits, output: out + column, outputStride: outputStride)
                            finish(more, pass: pass, rows: height, valid: nextValid, limits: limits, output: out + next, outputStride: outputStride)
                            r &+= height
                        }
                        done = p &+ 2
                        continue
                    }
                    #endif
                    var r = m0
                    for t in 0..<tiles {
                        let height = t < larger ? size &+ 1 : size
                        tile(a + (r &* aStride &+ k0), aStride: aStride, pass: pass, panel: panel, rows: height, valid: valid,
                             bias: bias.map { $0 + column }, limits: limits, output: output + (r &* outputStride &+ column),
                             outputStride: outputStride)
                        r &+= height
                    }
                }
            }
        }
    }

    /// One pass over part of the depth: the first starts the sums from the bias, later ones from
    /// what the pass before stored; the last clamps.
    private struct Pass {
        let depth: Int, first: Bool, last: Bool
    }

    /// Up to `Sums.rows` rows by one panel for one pass; `output` the first row's place in the panel's columns.
    @inline(__always)
    private static func tile(_ a: UnsafePointer<Float>, aStride: Int, pass: Pass, panel: UnsafePointer<Float>, rows: Int, valid: Int,
                             bias: UnsafePointer<Float>?, limits: (low: Sixteen, high: Sixteen), output: UnsafeMutablePointer<Float>,
                             outputStride: Int) {
        var sums = startSums(pass: pass, rows: rows, valid: valid, bias: bias, output: output, outputStride: outputStride)
        switch rows {
        case 1: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 1, step: 1, rowStride: aStride)
        case 2: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 2, step: 1, rowStride: aStride)
        case 3: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 3, step: 1, rowStride: aStride)
        case 4: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 4, step: 1, rowStride: aStride)
        case 5: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 5, step: 1, rowStride: aStride)
        #if KIROKU_AVX512
        case 6: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 6, step: 1, rowStride: aStride)
        case 7: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 7, step: 1, rowStride: aStride)
        default: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 8, step: 1, rowStride: aStride)
        #else
        default: sums.accumulate(broadcasting: a, times: panel, depth: pass.depth, rows: 6, step: 1, rowStride: aStride)
        #endif
        }
        finish(sums, pass: pass, rows: rows, valid: valid, limits: limits, output: output, outputStride: outputStride)
    }

    /// A tile's sums at the start of a pass: the bias on the first, what the pass before stored on later ones.
    @inline(__always)
    private static func startSums(pass: Pass, rows: Int, valid: Int, bias: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>,
                                  outputStride: Int) -> DirectConvolution.Sums {
        let initial = pass.first ? bias.map { load($0, valid) } ?? Sixteen() : Sixteen()
        return DirectConvolution.Sums { row in pass.first || row >= rows ? initial : load(output + row &* outputStride, valid) }
    }

    /// Stores a tile's first `rows` rows of sums, clamped on the last pass.
    @inline(__always)
    private static func finish(_ sums: DirectConvolution.Sums, pass: Pass, rows: Int, valid: Int, limits: (low: Sixteen, high: Sixteen),
                               output: UnsafeMutablePointer<Float>, outputStride: Int) {
        sums.forEach(rows: rows) { sum, row in
            store(sum, at: output + row &* outputStride, valid, clamping: pass.last ? limits : nil)
        }
    }

    /// The 16 floats at `source`, the lanes from `valid` on 0.
    @inline(__always)
    private static func load(_ source: UnsafePointer<Float>, _ valid: Int) -> Sixteen {
        guard valid < panelColumns else { return UnsafeRawPointer(source).loadSixteen() }
        var lanes = SIMD16<Float>()
        for c in 0..<valid { lanes[c] = source[c] }
        return Sixteen(lowHalf: lanes.lowHalf, highHalf: lanes.highHalf)
    }

    /// Stores the first `valid` of 16 floats at `target`, clamped to `limits` where given.
    @inline(__always)
    private static func store(_ sum: Sixteen, at target: UnsafeMutablePointer<Float>, _ valid: Int, clamping limits: (low: Sixteen, high: Sixteen)?) {
        let value = limits.map { clamped(sum, $0.low, $0.high) } ?? sum
        guard valid < panelColumns else { return UnsafeMutableRawPointer(target).storeSixteen(value) }
        for c in 0..<valid { target[c] = value[c] }
    }
}
#endif
