/// MaxPool and AveragePool over one plane, an output row at a time: the window's input rows
/// combined into one row (a vector pass over them together), then along that row at the stride,
/// times 1 / each window's count for averages, all while the row is in L1.
public enum WindowPooling {
    /// Output row oh (`rows[oh]`: its window's input rows inside the plane, `first` and every
    /// `rowStep`-th after, `count` of them) at column ow combines, over taps j in 0..<taps, the
    /// combined row at column ow * stride + j * dilation - left (nothing outside 0..<width); for
    /// averages (`maximum` false) the sum is multiplied by reciprocals.rows[oh] * reciprocals.columns[ow]
    /// (1 / the window's count along each axis, or 1 where none is inside: the sum is 0 there).
    /// `buffer` holds `bufferWidth` floats: at least left + width and every column a window reads;
    /// 16 more let stride 2 run in vectors to the row's end (it loads 16 floats to keep 8).
    public static func plane(_ input: UnsafePointer<Float>, width: Int, rows: UnsafeBufferPointer<(first: Int, count: Int)>, rowStep: Int,
                             columns: (left: Int, taps: Int, stride: Int, dilation: Int, outputs: Int), maximum: Bool,
                             reciprocals: (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?,
                             buffer: UnsafeMutablePointer<Float>, bufferWidth: Int, output: UnsafeMutablePointer<Float>) {
        if maximum {
            pool(Maximum.self, input, width, rows, rowStep, columns, nil, buffer, bufferWidth, output)
        } else {
            pool(Sum.self, input, width, rows, rowStep, columns, reciprocals, buffer, bufferWidth, output)
        }
    }

    @inline(__always)
    private static func pool<R: Reduction>(_: R.Type, _ input: UnsafePointer<Float>, _ width: Int,
                                           _ rows: UnsafeBufferPointer<(first: Int, count: Int)>, _ rowStep: Int,
                                           _ columns: (left: Int, taps: Int, stride: Int, dilation: Int, outputs: Int),
                                           _ reciprocals: (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?,
                                           _ buffer: UnsafeMutablePointer<Float>, _ bufferWidth: Int, _ output: UnsafeMutablePointer<Float>) {
        let (left, taps, stride, dilation, outputs) = columns
        // Padding either side of the combined row: what pooling's padding contributes.
        buffer.update(repeating: R.identity, count: left)
        (buffer + left + width).update(repeating: R.identity, count: bufferWidth - left - width)
        let combined = buffer + left
        for (oh, window) in rows.enumerated() {
            combineRows(R.self, input + window.first * width, count: window.count, step: rowStep * width, width: width, into: combined)
            let target = output + oh * outputs, rowFactor = reciprocals?.rows[oh] ?? 1
            // Vectors of 8 outputs, the last ending at the row's end (overlapping the one before),
            // while every load stays in the buffer; what is left, one at a time.
            var ow = 0
            if outputs >= 8 && stride <= 2 {
                while ow < outputs {
                    let at = min(ow, outputs - 8), first = buffer + at * stride
                    guard stride == 1 || 2 * at + (taps - 1) * dilation + 16 <= bufferWidth else { break }
                    var value = stride == 1 ? load(first) : loadEven(first)
                    for j in 1..<max(taps, 1) { value = R.combine(value, stride == 1 ? load(first + j * dilation) : loadEven(first + j * dilation)) }
                    if let reciprocals { value *= Vector(repeating: rowFactor) * load(reciprocals.columns + at) }
                    store(value, target + at)
                    ow += 8
                }
            }
            while ow < outputs {
                var value = buffer[ow * stride]
                for j in 1..<max(taps, 1) { value = R.combine(value, buffer[ow * stride + j * dilation]) }
                if let reciprocals { value *= rowFactor * reciprocals.columns[ow] }
                target[ow] = value
                ow += 1
            }
        }
    }

    /// Stride-1 pooling whose output is the input's size (InceptionV3's and GoogLeNet's 3x3, pads
    /// 1), rows at least 8 wide: the window's rows combined, row by row, into rows of
    /// width + kernel.w - 1 with the identity either side (what padding contributes), then each
    /// output row along its combined row in vectors of 8, the last ending at the row's end.
    /// `reciprocals`: one per position (1 / its count), for averages. `buffer`: height * (width +
    /// kernel.w - 1) floats.
    public static func samePlane(_ input: UnsafePointer<Float>, height: Int, width: Int, kernel: (h: Int, w: Int), pads: (top: Int, left: Int),
                                 maximum: Bool, reciprocals: UnsafePointer<Float>?, buffer: UnsafeMutablePointer<Float>,
                                 output: UnsafeMutablePointer<Float>) {
        if maximum {
            same(Maximum.self, input, height, width, kernel, pads, nil, buffer, output)
        } else {
            same(Sum.self, input, height, width, kernel, pads, reciprocals, buffer, output)
        }
    }

    @inline(__always)
    private static func same<R: Reduction>(_: R.Type, _ input: UnsafePointer<Float>, _ height: Int, _ width: Int, _ kernel: (h: Int, w: Int),
                                           _ pads: (top: Int, left: Int), _ reciprocals: UnsafePointer<Float>?,
                                           _ buffer: UnsafeMutablePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        let pitch = width + kernel.w - 1, left = pads.left
        for oh in 0..<height {
            let row = buffer + oh * pitch
            row.update(repeating: R.identity, count: left)
            (row + left + width).update(repeating: R.identity, count: pitch - left - width)
            let first = max(0, oh - pads.top), end = min(height, oh - pads.top + kernel.h)
            combineRows(R.self, input + first * width, count: max(0, end - first), step: width, width: width, into: row + left)
        }
        for oh in 0..<height {
            let row = buffer + oh * pitch, target = output + oh * width
            var ow = 0
            while ow < width {
                let at = min(ow, width - 8)
                var value = window(R.self, row + at, taps: kernel.w, step: 1)
                if let reciprocals { value *= load(reciprocals + oh * width + at) }
                store(value, target + at)
                ow += 8
            }
        }
    }

    /// MaxPool or AveragePool over one block of 8 channels (ChannelBlocks: a vector per position,
    /// `width` positions a row): output (oh, ow) combines the vectors at input rows rows[oh].first,
    /// every `rowStep`-th after, rows[oh].count of them, and columns columns[ow] likewise, every
    /// `columnStep`-th (the window's taps inside the plane); for averages (`maximum` false) the sum
    /// is multiplied by reciprocals.rows[oh] * reciprocals.columns[ow]; then `shift` (8 floats: a
    /// convolution's bias) is added if given.
    public static func block(_ input: UnsafePointer<Float>, width: Int, rows: UnsafeBufferPointer<(first: Int, count: Int)>, rowStep: Int,
                             columns: UnsafeBufferPointer<(first: Int, count: Int)>, columnStep: Int, maximum: Bool,
                             reciprocals: (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?, shift: UnsafePointer<Float>?,
                             output: UnsafeMutablePointer<Float>) {
        if maximum {
            block(Maximum.self, input, width, rows, rowStep, columns, columnStep, nil, shift, output)
        } else {
            block(Sum.self, input, width, rows, rowStep, columns, columnStep, reciprocals, shift, output)
        }
    }

    @inline(__always)
    private static func block<R: Reduction>(_: R.Type, _ input: UnsafePointer<Float>, _ width: Int,
                                            _ rows: UnsafeBufferPointer<(first: Int, count: Int)>, _ rowStep: Int,
                                            _ columns: UnsafeBufferPointer<(first: Int, count: Int)>, _ columnStep: Int,
                                            _ reciprocals: (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?,
                                            _ shift: UnsafePointer<Float>?, _ output: UnsafeMutablePointer<Float>) {
        let offset = shift.map(load) ?? Vector(), (rowFloats, columnFloats) = (rowStep &* width &* 8, columnStep &* 8)
        var target = output
        for (oh, window) in rows.enumerated() {
            let firstRow = input + window.first &* width &* 8, rowFactor = reciprocals?.rows[oh] ?? 1
            for (ow, span) in columns.enumerated() {
                var value = Vector(repeating: R.identity), row = firstRow + span.first &* 8
                for _ in 0..<window.count {
                    var source = row
                    for _ in 0..<span.count {
                        value = R.combine(value, load(source))
                        source += columnFloats
                    }
                    row += rowFloats
                }
                if let reciprocals { value *= Vector(repeating: rowFactor * reciprocals.columns[ow]) }
                store(value + offset, target)
                target += 8
            }
        }
    }

    /// The `taps` vectors at source, source + step, ... combined (3 unrolled: the usual window).
    @inline(__always)
    private static func window<R: Reduction>(_: R.Type, _ source: UnsafePointer<Float>, taps: Int, step: Int) -> Vector {
        if taps == 3 { return R.combine(R.combine(load(source), load(source + step)), load(source + 2 * step)) }
        var value = load(source)
        for k in 1..<max(taps, 1) { value = R.combine(value, load(source + k * step)) }
        return value
    }

    @inline(__always)
    private static func window<R: Reduction>(_: R.Type, _ source: UnsafeMutablePointer<Float>, taps: Int, step: Int) -> Vector {
        window(R.self, UnsafePointer(source), taps: taps, step: step)
    }

    /// target[0..<width] = the `count` rows at source, source + step, ... combined (identity if none).
    @inline(__always)
    private static func combineRows<R: Reduction>(_: R.Type, _ source: UnsafePointer<Float>, count: Int, step: Int, width: Int,
                                                  into target: UnsafeMutablePointer<Float>) {
        guard count > 0 else { return target.update(repeating: R.identity, count: width) }
        var c = 0
        while width >= 8 && c < width {
            let at = min(c, width - 8)  // the last vector ends at the row's end
            store(window(R.self, source + at, taps: count, step: step), target + at)
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

/// AveragePool's sum: padding adds zero (the reciprocals say whether it counts).
private enum Sum: Reduction {
    static var identity: Float { 0 }
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { a + b }
    @inline(__always) static func combine(_ a: Vector, _ b: Vector) -> Vector { a + b }
}
