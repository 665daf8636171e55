import Foundation

/// Bicubic resampling that antialiases when shrinking, computed as Pillow computes it (separable
/// passes, the filter's support widened by the scale factor, 22-bit fixed-point weights, 8-bit
/// rounding between passes), so tensors match the Python reference recipe closely.
enum Resampler {
    private static let precisionBits = 22

    /// Bicubic with a = -0.5, Pillow's BICUBIC.
    private static func bicubic(_ value: Double) -> Double {
        let x = abs(value), a = -0.5
        if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
        if x < 2 { return (((x - 5) * x + 8) * x - 4) * a }
        return 0
    }

    /// For each output position: the first input index and the fixed-point weights of the window.
    static func coefficients(inputStart: Double, inputEnd: Double, inputSize: Int, outputSize: Int) -> [(first: Int, weights: [Int32])] {
        let scale = (inputEnd - inputStart) / Double(outputSize)
        let filterScale = max(scale, 1)
        let support = 2.0 * filterScale
        return (0..<outputSize).map { index in
            let center = inputStart + (Double(index) + 0.5) * scale
            let first = max(Int(center - support + 0.5), 0)
            let last = min(Int(center + support + 0.5), inputSize)
            var weights = (first..<max(first, last)).map { bicubic((Double($0) - center + 0.5) / filterScale) }
            let total = weights.reduce(0, +)
            if total != 0 { weights = weights.map { $0 / total } }
            return (first, weights.map { w in Int32(w < 0 ? -0.5 + w * Double(1 << precisionBits) : 0.5 + w * Double(1 << precisionBits)) })
        }
    }

    /// Weights flattened for the inner loops: window i reads `count[i]` inputs from `first[i]`,
    /// with weights at weights[offset[i]...].
    private struct Table {
        var first: [Int32] = [], count: [Int32] = [], offset: [Int32] = [], weights: [Int32] = []

        init(_ windows: [(first: Int, weights: [Int32])]) {
            for window in windows {
                first.append(Int32(window.first))
                count.append(Int32(window.weights.count))
                offset.append(Int32(weights.count))
                weights += window.weights
            }
        }
    }

    /// Resamples `source` (RGB, `sourceWidth` x `sourceHeight`), region (x0, y0, x1, y1) of it, to
    /// `width` x `height` RGB bytes.
    static func resize(_ source: UnsafeBufferPointer<UInt8>, sourceWidth: Int, sourceHeight: Int,
                       box: (x0: Int, y0: Int, x1: Int, y1: Int), width: Int, height: Int) -> [UInt8] {
        let vertical = coefficients(inputStart: Double(box.y0), inputEnd: Double(box.y1), inputSize: sourceHeight, outputSize: height)
        let horizontal = Table(coefficients(inputStart: Double(box.x0), inputEnd: Double(box.x1), inputSize: sourceWidth, outputSize: width))
        let rows = Table(vertical)
        // Rows the vertical pass reads.
        let firstRow = vertical.map(\.first).min() ?? 0
        let lastRow = vertical.map { $0.first + $0.weights.count }.max() ?? 0
        let rounding = Int32(1 << (precisionBits - 1))
        var middle = [UInt8](repeating: 0, count: max(lastRow - firstRow, 0) * width * 3)
        var out = [UInt8](repeating: 0, count: width * height * 3)
        middle.withUnsafeMutableBufferPointer { middle in
            horizontal.weights.withUnsafeBufferPointer { weights in
                for row in firstRow..<lastRow {
                    let line = source.baseAddress! + row * sourceWidth * 3
                    let target = middle.baseAddress! + (row - firstRow) * width * 3
                    for x in 0..<width {
                        var r = rounding, g = rounding, b = rounding
                        let pixel = line + Int(horizontal.first[x]) * 3, w = weights.baseAddress! + Int(horizontal.offset[x])
                        for k in 0..<Int(horizontal.count[x]) {
                            r &+= Int32(pixel[k * 3]) &* w[k]
                            g &+= Int32(pixel[k * 3 + 1]) &* w[k]
                            b &+= Int32(pixel[k * 3 + 2]) &* w[k]
                        }
                        target[x * 3] = clamp(r)
                        target[x * 3 + 1] = clamp(g)
                        target[x * 3 + 2] = clamp(b)
                    }
                }
            }
            out.withUnsafeMutableBufferPointer { out in
                rows.weights.withUnsafeBufferPointer { weights in
                    // Whole rows at a time: the inner loop runs along the row, which vectorises.
                    let stride = width * 3
                    var sums = [Int32](repeating: 0, count: stride)
                    sums.withUnsafeMutableBufferPointer { sums in
                        for y in 0..<height {
                            let w = weights.baseAddress! + Int(rows.offset[y])
                            let base = middle.baseAddress! + (Int(rows.first[y]) - firstRow) * stride
                            sums.update(repeating: rounding)
                            for k in 0..<Int(rows.count[y]) {
                                let weight = w[k], line = base + k * stride
                                for i in 0..<stride { sums[i] &+= Int32(line[i]) &* weight }
                            }
                            let target = out.baseAddress! + y * stride
                            for i in 0..<stride { target[i] = clamp(sums[i]) }
                        }
                    }
                }
            }
        }
        return out
    }

    private static func clamp(_ value: Int32) -> UInt8 {
        UInt8(clamping: value >> Int32(precisionBits))
    }
}
