/// Levels of one scale as levels of another, as DequantizeLinear then QuantizeLinear compute
/// them in floats: level((level + shift) · scale / divisor), the division rounded as QuantizeLinear's.
struct LevelScaling {
    let scale: Float, shift: Float, divisor: Float

    /// 8 levels rescaled.
    @inline(__always)
    func levels(_ levels: SIMD8<Int16>, bounds: ClosedRange<Int32>) -> SIMD8<Int16> {
        Requantized.levels((Requantized.floats(levels: levels) + SIMD8(repeating: shift)) * SIMD8(repeating: scale) / SIMD8(repeating: divisor),
                           bounds: bounds)
    }

    /// One level rescaled.
    @inline(__always)
    func level(_ level: Int16, bounds: ClosedRange<Int32>) -> Int16 {
        Requantized.level((Float(level) + shift) * scale / divisor, bounds: bounds)
    }
}

/// The elementwise loops around the integer operators: floats (NCHW planes) to centred levels
/// (positions by channels, `stride` apart) and back, and the requantized sum of two quantized values.
public enum LevelLoops {
    /// Floats of `channels` channels (channel c's positions from source + c · plane), each times
    /// its channel's factor where `factors` are given (a squeeze-excitation's Mul, rounded as it
    /// rounds), as levels of `count` positions (position p's channels side by side from target + p
    /// · stride): level(x / scale). Blocks of 8 channels by 8 positions go through a transpose,
    /// each position's 8 levels one store (MobileNetV3's 33 steps: 1.01 -> 0.83 ms); the rest a
    /// level per store.
    public static func quantize(_ source: UnsafePointer<Float>, plane: Int, channels: Int, count: Int, scale: Float, factors: UnsafePointer<Float>?,
                                bounds: ClosedRange<Int32>, into target: UnsafeMutablePointer<Int16>, stride: Int) {
        let divisor = SIMD8<Float>(repeating: scale), blocked = channels / 8 * 8, whole = count / 8 * 8
        // A value times 1 is that value, bit for bit: without factors each channel's is 1.
        @inline(__always) func factor(_ c: Int) -> Float { factors?[c] ?? 1 }
        withUnsafeTemporaryAllocation(of: SIMD8<Float>.self, capacity: 16) { rows in
            for c in Swift.stride(from: 0, to: blocked, by: 8) {
                for p in Swift.stride(from: 0, to: whole, by: 8) {
                    for j in 0..<8 { rows[j] = UnsafeRawPointer(source + ((c &+ j) &* plane &+ p)).loadUnaligned(as: SIMD8<Float>.self) * factor(c &+ j) }
                    let positions = transpose8x8(rows.baseAddress!)
                    for j in 0..<8 {
                        UnsafeMutableRawPointer(target + ((p &+ j) &* stride &+ c))
                            .storeBytes(of: Requantized.levels(positions[j] / divisor, bounds: bounds), as: SIMD8<Int16>.self)
                    }
                }
            }
        }
        // The rest a level per store: the blocks' channels past their last whole block of
        // positions, and every position of the channels past the blocks (an image's 3), 8 at a time.
        for c in 0..<channels {
            var p = c < blocked ? whole : 0
            while p &+ 8 <= count {
                let values = UnsafeRawPointer(source + (c &* plane &+ p)).loadUnaligned(as: SIMD8<Float>.self) * factor(c)
                let levels = Requantized.levels(values / divisor, bounds: bounds)
                for j in 0..<8 { target[(p &+ j) &* stride &+ c] = levels[j] }
                p &+= 8
            }
            for q in p..<count { target[q &* stride &+ c] = Requantized.level(source[c &* plane &+ q] * factor(c) / scale, bounds: bounds) }
        }
    }

    /// Levels of `channels` channels at `count` positions (position p's side by side from source +
    /// p · stride) as floats (level + shift) · scale, channel c's positions from target + c ·
    /// plane. Blocks of 8 channels by 8 positions go through a transpose, each channel's 8 floats
    /// one store (DLA-34's 28 steps had read each level alone: 6x ONNX Runtime's time); the rest
    /// a value per store.
    public static func dequantize(_ source: UnsafePointer<Int16>, stride: Int, channels: Int, count: Int, scale: Float, shift: Float,
                                  into target: UnsafeMutablePointer<Float>, plane: Int) {
        let (scales, shifts) = (SIMD8<Float>(repeating: scale), SIMD8<Float>(repeating: shift))
        let blocked = channels / 8 * 8, whole = count / 8 * 8
        withUnsafeTemporaryAllocation(of: SIMD8<Float>.self, capacity: 16) { rows in
            for c in Swift.stride(from: 0, to: blocked, by: 8) {
                for p in Swift.stride(from: 0, to: whole, by: 8) {
                    for j in 0..<8 {
                        let levels = UnsafeRawPointer(source + ((p &+ j) &* stride &+ c)).loadUnaligned(as: SIMD8<Int16>.self)
                        rows[j] = (Requantized.floats(levels: levels) + shifts) * scales
                    }
                    let planes = transpose8x8(rows.baseAddress!)
                    for j in 0..<8 { UnsafeMutableRawPointer(target + ((c &+ j) &* plane &+ p)).storeBytes(of: planes[j], as: SIMD8<Float>.self) }
                }
            }
        }
        for c in 0..<channels {
            for p in (c < blocked ? whole : 0)..<count { target[c &* plane &+ p] = (Float(source[p &* stride &+ c]) + shift) * scale }
        }
    }

    /// Each channel's sum of the levels of `count` positions (position p's `channels` levels side
    /// by side from source + p · stride) into `sums` (int32: a caller keeps count · 32,768 within
    /// it). Channels 32 at a time down every position, their sums in registers; then 8, then one.
    public static func channelSums(_ source: UnsafePointer<Int16>, stride: Int, channels: Int, count: Int, into sums: UnsafeMutablePointer<Int32>) {
        @inline(__always) func levels(_ p: Int, _ c: Int) -> SIMD8<Int32> {
            SIMD8<Int32>(truncatingIfNeeded: UnsafeRawPointer(source + (p &* stride &+ c)).loadUnaligned(as: SIMD8<Int16>.self))
        }
        @inline(__always) func store(_ total: SIMD8<Int32>, _ c: Int) { UnsafeMutableRawPointer(sums + c).storeBytes(of: total, as: SIMD8<Int32>.self) }
        var c = 0
        while c &+ 32 <= channels {
            var (a, b, d, e) = (SIMD8<Int32>.zero, SIMD8<Int32>.zero, SIMD8<Int32>.zero, SIMD8<Int32>.zero)
            for p in 0..<count {
                a &+= levels(p, c)
                b &+= levels(p, c &+ 8)
                d &+= levels(p, c &+ 16)
                e &+= levels(p, c &+ 24)
            }
            store(a, c)
            store(b, c &+ 8)
            store(d, c &+ 16)
            store(e, c &+ 24)
            c &+= 32
        }
        while c &+ 8 <= channels {
            var a = SIMD8<Int32>.zero
            for p in 0..<count { a &+= levels(p, c) }
            store(a, c)
            c &+= 8
        }
        while c < channels {
            var a: Int32 = 0
            for p in 0..<count { a &+= Int32(source[p &* stride &+ c]) }
            sums[c] = a
            c &+= 1
        }
    }

    /// The levels of `count` positions (`channels` side by side, position p's from source + p ·
    /// stride, to target + p · stride) each times its channel's factor, as DequantizeLinear, Mul and
    /// QuantizeLinear compute it in floats: level(((level + shift) · scale) · factor[c] / divisor).
    public static func scaleChannels(_ source: UnsafePointer<Int16>, stride: Int, channels: Int, count: Int,
                                     scaling: (scale: Float, shift: Float, divisor: Float), factors: UnsafePointer<Float>,
                                     bounds: ClosedRange<Int32>, into target: UnsafeMutablePointer<Int16>) {
        let (scale, shift, divisor) = (SIMD8<Float>(repeating: scaling.scale), SIMD8<Float>(repeating: scaling.shift),
                                       SIMD8<Float>(repeating: scaling.divisor))
        for p in 0..<count {
            let (row, out) = (source + p &* stride, target + p &* stride)
            var c = 0
            while c &+ 8 <= channels {
                let values = (Requantized.floats(levels: UnsafeRawPointer(row + c).loadUnaligned(as: SIMD8<Int16>.self)) + shift) * scale
                let scaled = values * UnsafeRawPointer(factors + c).loadUnaligned(as: SIMD8<Float>.self) / divisor
                UnsafeMutableRawPointer(out + c).storeBytes(of: Requantized.levels(scaled, bounds: bounds), as: SIMD8<Int16>.self)
                c &+= 8
            }
            while c < channels {
                out[c] = Requantized.level((Float(row[c]) + scaling.shift) * scaling.scale * factors[c] / scaling.divisor, bounds: bounds)
                c &+= 1
            }
        }
    }

    /// y[i] = level(a[i] · scales.a + b[i] · scales.b) for i below `count`.
    public static func add(_ a: UnsafePointer<Int16>, _ b: UnsafePointer<Int16>, count: Int, scales: (a: Float, b: Float),
                           bounds: ClosedRange<Int32>, into y: UnsafeMutablePointer<Int16>) {
        let (scaleA, scaleB) = (SIMD8<Float>(repeating: scales.a), SIMD8<Float>(repeating: scales.b))
        var i = 0
        while i &+ 8 <= count {
            let x = Requantized.floats(levels: UnsafeRawPointer(a + i).loadUnaligned(as: SIMD8<Int16>.self))
            let z = Requantized.floats(levels: UnsafeRawPointer(b + i).loadUnaligned(as: SIMD8<Int16>.self))
            UnsafeMutableRawPointer(y + i).storeBytes(of: Requantized.levels(x * scaleA + z * scaleB, bounds: bounds), as: SIMD8<Int16>.self)
            i &+= 8
        }
        for j in i..<count { y[j] = Requantized.level(Float(a[j]) * scales.a + Float(b[j]) * scales.b, bounds: bounds) }
    }

    /// Max pooling over the levels of one image (positions by channels): output[oy][ox][c] = the
    /// largest input[oy · sh − top + ky · dh][ox · sw − left + kx · dw][c] over the window's taps
    /// inside the input (padding takes no part, as in ONNX's MaxPool), rescaled if `requantization`
    /// is given (level((level + shift) · scale / divisor)), clamped to `bounds`; the lowest of
    /// `bounds` where no tap lies inside (a float -inf, quantized); for output rows
    /// `rows` (`sizes`: input, output; `window`: kernel, stride, dilation).
    public static func maxPool(_ rows: Range<Int>, input: UnsafePointer<Int16>, sizes: (input: (h: Int, w: Int), output: (h: Int, w: Int)),
                               channels: Int, window: (kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int)),
                               pads: (top: Int, left: Int), requantization scaling: (scale: Float, shift: Float, divisor: Float)?,
                               bounds: ClosedRange<Int32>, into output: UnsafeMutablePointer<Int16>) {
        let (low, high) = (Int16(clamping: bounds.lowerBound), Int16(clamping: bounds.upperBound))
        let requantization = scaling.map { LevelScaling(scale: $0.scale, shift: $0.shift, divisor: $0.divisor) }
        /// A largest level as an output level.
        func level(_ largest: SIMD16<Int16>) -> SIMD16<Int16> {
            guard let requantization else { return largest.clamped(lowerBound: SIMD16(repeating: low), upperBound: SIMD16(repeating: high)) }
            return SIMD16(lowHalf: requantization.levels(largest.lowHalf, bounds: bounds), highHalf: requantization.levels(largest.highHalf, bounds: bounds))
        }
        /// The taps of a window whose first tap is at `first` (of `count`, `step` apart) inside 0..<size.
        func inside(first: Int, count: Int, step: Int, size: Int) -> Range<Int> {
            let low = first >= 0 ? 0 : (step &- 1 &- first) / step
            let high = first >= size ? 0 : min(count, (size &- 1 &- first) / step &+ 1)
            return low..<max(low, high)
        }
        /// Where input position (y, x) starts, in levels.
        func position(_ y: Int, _ x: Int) -> Int { (y &* sizes.input.w &+ x) &* channels }
        let (columnStep, lowest) = (window.dilation.w &* channels, SIMD16<Int16>(repeating: .min))
        for oy in rows {
            let top = oy &* window.stride.h &- pads.top
            let ys = inside(first: top, count: window.kernel.h, step: window.dilation.h, size: sizes.input.h)
            for ox in 0..<sizes.output.w {
                let left = ox &* window.stride.w &- pads.left
                let xs = inside(first: left, count: window.kernel.w, step: window.dilation.w, size: sizes.input.w)
                let target = output + (oy &* sizes.output.w &+ ox) &* channels
                guard !ys.isEmpty, !xs.isEmpty else {
                    // No tap inside: the max is a float -inf, whose level is the lowest at any scale.
                    target.update(repeating: low, count: channels)
                    continue
                }
                /// Stores the output levels of the 16 channels from `c`.
                func sixteen(from c: Int) {
                    var largest = lowest
                    for ky in ys {
                        let line = input + (position(top &+ ky &* window.dilation.h, left) &+ c)
                        for kx in xs {
                            let levels = UnsafeRawPointer(line + kx &* columnStep).loadUnaligned(as: SIMD16<Int16>.self)
                            largest = pointwiseMax(largest, levels)
                        }
                    }
                    UnsafeMutableRawPointer(target + c).storeBytes(of: level(largest), as: SIMD16<Int16>.self)
                }
                var c = 0
                while c &+ 16 <= channels {
                    sixteen(from: c)
                    c &+= 16
                }
                // The last channels as the last 16, overlapping those before (stored twice, the
                // same): one at a time, 24 channels (ShuffleNetV2's) took 5 times as long.
                if c < channels, channels >= 16 {
                    sixteen(from: channels &- 16)
                    c = channels
                }
                while c < channels {
                    var largest = Int16.min
                    for ky in ys {
                        let line = input + (position(top &+ ky &* window.dilation.h, left) &+ c)
                        for kx in xs { largest = max(largest, line[kx &* columnStep]) }
                    }
                    target[c] = requantization?.level(largest, bounds: bounds) ?? min(max(largest, low), high)
                    c &+= 1
                }
            }
        }
    }
}
