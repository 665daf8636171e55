/// MaxPool and AveragePool over one plane, an output row at a time: the window's input rows
/// combined into one row (a vector pass over them together), then along that row at the stride,
/// divided by each window's count for averages, all while the row is in L1.
public enum WindowPooling {
    /// Output row oh (`rows[oh]`: its window's input rows inside the plane, `first` and every
    /// `rowStep`-th after, `count` of them) at column ow combines, over taps j in 0..<taps, the
    /// combined row at column ow * stride + j * dilation - left (nothing outside 0..<width); for
    /// averages (`maximum` false) the sum is divided by max(divisors.rows[oh] * divisors.columns[ow], 1).
    /// `buffer` holds `bufferWidth` floats: at least left + width and every column a window reads;
    /// 16 more let stride 2 run in vectors to the row's end (it loads 16 floats to keep 8).
    public static func plane(_ input: UnsafePointer<Float>, width: Int, rows: UnsafeBufferPointer<(first: Int, count: Int)>, rowStep: Int,
                             columns: (left: Int, taps: Int, stride: Int, dilation: Int, outputs: Int), maximum: Bool,
                             divisors: (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?,
                             buffer: UnsafeMutablePointer<Float>, bufferWidth: Int, output: UnsafeMutablePointer<Float>) {
        if maximum {
            pool(Maximum.self, input, width, rows, rowStep, columns, nil, buffer, bufferWidth, output)
        } else {
            pool(Sum.self, input, width, rows, rowStep, columns, divisors, buffer, bufferWidth, output)
        }
    }

    @inline(__always)
    private static func pool<R: Reduction>(_: R.Type, _ input: UnsafePointer<Float>, _ width: Int,
                                           _ rows: UnsafeBufferPointer<(first: Int, count: Int)>, _ rowStep: Int,
                                           _ columns: (left: Int, taps: Int, stride: Int, dilation: Int, outputs: Int),
                                           _ divisors: (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?,
                                           _ buffer: UnsafeMutablePointer<Float>, _ bufferWidth: Int, _ output: UnsafeMutablePointer<Float>) {
        let (left, taps, stride, dilation, outputs) = columns
        // Padding either side of the combined row: what pooling's padding contributes.
        buffer.update(repeating: R.identity, count: left)
        (buffer + left + width).update(repeating: R.identity, count: bufferWidth - left - width)
        let combined = buffer + left
        for (oh, window) in rows.enumerated() {
            combineRows(R.self, input + window.first * width, count: window.count, step: rowStep * width, width: width, into: combined)
            let target = output + oh * outputs, rowFactor = divisors?.rows[oh] ?? 1
            // Vectors of 8 outputs, the last ending at the row's end (overlapping the one before),
            // while every load stays in the buffer; what is left, one at a time.
            var ow = 0
            if outputs >= 8 && stride <= 2 {
                while ow < outputs {
                    let at = min(ow, outputs - 8), first = buffer + at * stride
                    guard stride == 1 || 2 * at + (taps - 1) * dilation + 16 <= bufferWidth else { break }
                    var value = stride == 1 ? load(first) : loadEven(first)
                    for j in 1..<max(taps, 1) { value = R.combine(value, stride == 1 ? load(first + j * dilation) : loadEven(first + j * dilation)) }
                    if let divisors {
                        let one = Vector(repeating: 1)
                        var divisor = Vector(repeating: rowFactor) * load(divisors.columns + at)
                        divisor.replace(with: one, where: divisor .< one)
                        value /= divisor
                    }
                    store(value, target + at)
                    ow += 8
                }
            }
            while ow < outputs {
                var value = buffer[ow * stride]
                for j in 1..<max(taps, 1) { value = R.combine(value, buffer[ow * stride + j * dilation]) }
                if let divisors { value /= max(rowFactor * divisors.columns[ow], 1) }
                target[ow] = value
                ow += 1
            }
        }
    }

    /// Stride-1 pooling whose output is the input's size (InceptionV3's and GoogLeNet's 3x3, pads
    /// 1), over the flattened plane: the window's rows combined in one pass (the rows whose windows
    /// lie inside the plane in a single loop), then along it in another that also divides; a
    /// shift along the flattened plane wraps into the neighbouring row, so the `left` first and
    /// the kernel.w - 1 - left last columns of each row are recomputed after. `divisors`: one per
    /// position, for averages. `buffer`: height * width + kernel.w floats.
    public static func samePlane(_ input: UnsafePointer<Float>, height: Int, width: Int, kernel: (h: Int, w: Int), pads: (top: Int, left: Int),
                                 maximum: Bool, divisors: UnsafePointer<Float>?, buffer: UnsafeMutablePointer<Float>,
                                 output: UnsafeMutablePointer<Float>) {
        if maximum {
            same(Maximum.self, input, height, width, kernel, pads, nil, buffer, output)
        } else {
            same(Sum.self, input, height, width, kernel, pads, divisors, buffer, output)
        }
    }

    @inline(__always)
    private static func same<R: Reduction>(_: R.Type, _ input: UnsafePointer<Float>, _ height: Int, _ width: Int, _ kernel: (h: Int, w: Int),
                                           _ pads: (top: Int, left: Int), _ divisors: UnsafePointer<Float>?,
                                           _ buffer: UnsafeMutablePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        let plane = height * width, (left, right) = (pads.left, kernel.w - 1 - pads.left)
        // The combined rows at buffer + left, identity either side (a window past either end of the plane).
        let combined = buffer + left
        buffer.update(repeating: R.identity, count: left)
        (combined + plane).update(repeating: R.identity, count: kernel.w - left)
        // Rows oh whose window rows oh - top ..< oh - top + kh all lie in the plane, in one loop.
        let inside = max(0, min(height, height - (kernel.h - 1 - pads.top)) - pads.top)
        let rowRange = { (oh: Int) -> (first: Int, count: Int) in
            let first = max(0, oh - pads.top), end = min(height, oh - pads.top + kernel.h)
            return (first, max(0, end - first))
        }
        for oh in 0..<height where inside == 0 || oh < pads.top || oh >= pads.top + inside {
            let rows = rowRange(oh)
            combineRows(R.self, input + rows.first * width, count: rows.count, step: width, width: width, into: combined + oh * width)
        }
        if inside > 0 {
            combineRows(R.self, input, count: kernel.h, step: width, width: inside * width, into: combined + pads.top * width)
        }
        // Along the flattened plane, then each row's wrapped columns again.
        var i = 0
        while plane >= 8 && i < plane {
            let at = min(i, plane - 8)
            var value = load(buffer + at)
            for j in 1..<max(kernel.w, 1) { value = R.combine(value, load(buffer + at + j)) }
            if let divisors { value /= load(divisors + at) }
            store(value, output + at)
            i += 8
        }
        let recompute = { (position: Int, c: Int) in
            let (lower, upper) = (max(0, left - c), min(kernel.w, width + left - c))
            var value = R.identity
            if lower < upper { for j in lower..<upper { value = R.combine(value, combined[position + j - left]) } }
            if let divisors { value /= divisors[position] }
            output[position] = value
        }
        if i < plane {
            for position in 0..<plane { recompute(position, position % width) }
        } else {
            for h in 0..<height {
                for c in 0..<min(left, width) { recompute(h * width + c, c) }
                for c in max(width - right, min(left, width))..<width { recompute(h * width + c, c) }
            }
        }
    }

    /// target[0..<width] = the `count` rows at source, source + step, ... combined (identity if none).
    @inline(__always)
    private static func combineRows<R: Reduction>(_: R.Type, _ source: UnsafePointer<Float>, count: Int, step: Int, width: Int,
                                                  into target: UnsafeMutablePointer<Float>) {
        guard count > 0 else { return target.update(repeating: R.identity, count: width) }
        var c = 0
        while width >= 8 && c < width {
            let at = min(c, width - 8)  // the last vector ends at the row's end
            var value = load(source + at)
            for k in 1..<count { value = R.combine(value, load(source + k * step + at)) }
            store(value, target + at)
            c += 8
        }
        while c < width {
            var value = source[c]
            for k in 1..<count { value = R.combine(value, source[k * step + c]) }
            target[c] = value
            c += 1
        }
    }

    @inline(__always)
    private static func load(_ pointer: UnsafePointer<Float>) -> Vector { UnsafeRawPointer(pointer).loadUnaligned(as: Vector.self) }

    @inline(__always)
    private static func load(_ pointer: UnsafeMutablePointer<Float>) -> Vector { load(UnsafePointer(pointer)) }

    /// pointer[0], pointer[2], ... pointer[14].
    @inline(__always)
    private static func loadEven(_ pointer: UnsafeMutablePointer<Float>) -> Vector {
        UnsafeRawPointer(pointer).loadUnaligned(as: SIMD16<Float>.self).evenHalf
    }

    @inline(__always)
    private static func store(_ value: Vector, _ pointer: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(pointer).storeBytes(of: value, as: Vector.self)
    }
}

/// How a window's values combine, and what padding contributes.
private protocol Reduction {
    static var identity: Float { get }
    static func combine(_ a: Float, _ b: Float) -> Float
    static func combine(_ a: Vector, _ b: Vector) -> Vector
}

/// MaxPool: padding is -infinity, which never wins.
private enum Maximum: Reduction {
    static var identity: Float { -.infinity }
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { max(a, b) }
    @inline(__always) static func combine(_ a: Vector, _ b: Vector) -> Vector { a.replacing(with: b, where: a .< b) }
}

/// AveragePool's sum: padding adds zero (the divisors say whether it counts).
private enum Sum: Reduction {
    static var identity: Float { 0 }
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { a + b }
    @inline(__always) static func combine(_ a: Vector, _ b: Vector) -> Vector { a + b }
}
