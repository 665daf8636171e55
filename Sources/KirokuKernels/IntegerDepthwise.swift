#if KIROKU_AVX2
import _Builtin_intrinsics.intel
#endif

/// A depthwise convolution over int16 centred levels in NHWC: each channel's window times its
/// own 8-bit weights, summed in int32. Taps go in pairs, so that AVX2's vpmaddwd multiplies and
/// adds two taps of 8 channels exactly in one instruction: the pair's inputs of 16 channels are
/// interleaved (vpunpcklwd / vpunpckhwd) against weights packed the same way, [group of 16
/// channels][pair of taps][2][16] (see `packedIndex`), a missing second tap weighing zero. Taps
/// outside the input read zero, which is the zero point of centred levels.
public enum IntegerDepthwise {
    /// Where weight (channel j of its group of 16, tap t) lies in its group's packed weights: the
    /// first vector of a pair holds channels 0-3 and 8-11, the second 4-7 and 12-15, each channel
    /// as (tap 2p, tap 2p + 1) side by side, as vpunpck{l,h}wd interleave 128-bit halves.
    public static func packedIndex(channel j: Int, tap t: Int) -> Int {
        (t / 2) * 32 + ((j >> 2) & 1) * 16 + (j >> 3) * 8 + (j & 3) * 2 + t % 2
    }

    /// The geometry of one convolution (sizes in positions; the input `channels` wide per position).
    struct Geometry {
        let input: (h: Int, w: Int), output: (h: Int, w: Int), channels: Int
        let kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int), pads: (top: Int, left: Int)

        var taps: Int { kernel.h &* kernel.w }

        /// The output columns whose windows lie inside the input's width.
        var interiorColumns: Range<Int> {
            let first = (pads.left &+ stride.w &- 1) / stride.w
            let last = (input.w &- 1 &- (kernel.w &- 1) &* dilation.w &+ pads.left)
            let end = last < 0 ? 0 : last / stride.w &+ 1
            return first..<max(first, min(end, output.w))
        }
        var pairs: Int { (taps &+ 1) / 2 }
    }

    /// Output rows `rows` of one image: output[oy][ox][c] = requantized(sum over taps of
    /// input[oy · sh − top + ky · dh][ox · sw − left + kx · dw][c] · w[c][ky][kx]), requantized
    /// and stored as IntegerGemm.run's are (`sizes`: input, output; `window`: kernel, stride,
    /// dilation; `channels` per position).
    public static func rows(_ rows: Range<Int>, input: UnsafePointer<Int16>, sizes: (input: (h: Int, w: Int), output: (h: Int, w: Int)),
                            channels: Int, window: (kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int)),
                            pads: (top: Int, left: Int), weights: UnsafePointer<Int16>, scale: UnsafePointer<Float>,
                            offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>?, output base: UnsafeMutableRawPointer,
                            strides: (row: Int, channel: Int)) {
        let g = Geometry(input: sizes.input, output: sizes.output, channels: channels, kernel: window.kernel, stride: window.stride,
                         dilation: window.dilation, pads: pads)
        let requantization = Requantization(scale: scale, offset: offset, bounds: bounds)
        let output = IntegerOutput(base: base, rowStride: strides.row, channelStride: strides.channel)
        let groupWeights = g.pairs &* 32, vectorGroups = g.channels / 16
        withUnsafeTemporaryAllocation(of: Tap.self, capacity: g.taps) { taps in
            for t in 0..<g.taps {
                let (ky, kx) = (t / g.kernel.w, t % g.kernel.w)
                taps[t] = Tap(y: ky &* g.dilation.h, x: kx &* g.dilation.w,
                              offset: (ky &* g.dilation.h &* g.input.w &+ kx &* g.dilation.w) &* g.channels)
            }
            let table = UnsafeBufferPointer(taps)
            // A group's weights stay in cache while it runs over every position of the rows.
            for group in 0..<vectorGroups {
                let w = weights + group &* groupWeights, channel = group &* 16
                let levels = bounds.map { IntegerGemm.TileLevels(scale: scale + channel, offset: offset + channel, bounds: $0) }
                for oy in rows {
                    let iy = oy &* g.stride.h &- g.pads.top
                    let rowsInside = iy >= 0 && iy &+ (g.kernel.h &- 1) &* g.dilation.h < g.input.h
                    // The row's outputs whose windows lie inside the input, in one run (AVX2, levels).
                    var interior = 0..<0
                    #if KIROKU_AVX2
                    if rowsInside, let levels {
                        interior = g.interiorColumns
                        let first = oy &* g.output.w &+ interior.lowerBound
                        interiorRun(input + ((iy &* g.input.w &+ interior.lowerBound &* g.stride.w &- g.pads.left) &* g.channels &+ channel),
                                    step: g.stride.w &* g.channels, count: interior.count, taps: table, weights: w, levels: levels,
                                    output: base + (first &* strides.row &+ channel) &* 2, outputStep: strides.row &* 2)
                    }
                    #endif
                    for ox in 0..<g.output.w where !interior.contains(ox) {
                        let ix = ox &* g.stride.w &- g.pads.left
                        let inside = rowsInside && ix >= 0 && ix &+ (g.kernel.w &- 1) &* g.dilation.w < g.input.w
                        let corner = input + ((iy &* g.input.w &+ ix) &* g.channels &+ channel)
                        let sums = inside ? interiorSums(corner, taps: table, count: g.taps, weights: w)
                                          : groupSums(corner, g, y: iy, x: ix, taps: table, weights: w)
                        let row = oy &* g.output.w &+ ox
                        if let levels {
                            let target = base + (row &* strides.row &+ channel) &* 2
                            levels.store(sums.0, half: 0, at: target)
                            levels.store(sums.1, half: 1, at: target)
                        } else {
                            IntegerGemm.store(sums.0, row: row, channel: channel, channels: g.channels, requantization, output)
                            IntegerGemm.store(sums.1, row: row, channel: channel &+ 8, channels: g.channels, requantization, output)
                        }
                    }
                }
            }
            for c in vectorGroups &* 16..<g.channels {
                let w = weights + vectorGroups &* groupWeights
                for oy in rows {
                    for ox in 0..<g.output.w {
                        let (iy, ix) = (oy &* g.stride.h &- g.pads.top, ox &* g.stride.w &- g.pads.left)
                        let base = input + ((iy &* g.input.w &+ ix) &* g.channels &+ c)
                        var sum: Int32 = 0
                        for (t, tap) in table.enumerated() where tap.inside(g, y: iy, x: ix) {
                            sum &+= Int32(base[tap.offset]) &* Int32(w[packedIndex(channel: c & 15, tap: t)])
                        }
                        IntegerGemm.store(SIMD8(sum, 0, 0, 0, 0, 0, 0, 0), row: oy &* g.output.w &+ ox, channel: c, channels: c &+ 1,
                                          requantization, output)
                    }
                }
            }
        }
    }

    /// One tap of the window: its rows and columns below the window's corner, and where it reads
    /// from the corner's position (in int16 elements).
    struct Tap {
        let y: Int, x: Int, offset: Int

        /// Whether the tap of the window whose corner is (y, x) lies inside the input.
        @inline(__always)
        func inside(_ g: Geometry, y corner: Int, x left: Int) -> Bool {
            let (iy, ix) = (corner &+ y, left &+ x)
            return iy >= 0 && iy < g.input.h && ix >= 0 && ix < g.input.w
        }
    }

    /// `groupSums` of a window wholly inside the input: no tap is checked (`count` taps of `taps`).
    @inline(__always)
    static func interiorSums(_ corner: UnsafePointer<Int16>, taps: UnsafeBufferPointer<Tap>, count: Int, weights: UnsafePointer<Int16>)
        -> (SIMD8<Int32>, SIMD8<Int32>) {
        #if KIROKU_AVX2
        pairSums(count: count, weights: weights) { t in
            _mm256_loadu_si256(UnsafeRawPointer(corner + taps[t].offset).assumingMemoryBound(to: __m256i.self))
        }
        #else
        tapSums(corner, taps: taps, weights: weights) { _ in true }
        #endif
    }

    #if KIROKU_AVX2
    /// The sums over `count` taps whose 16 channels `load(t)` gives, taken in pairs: each pair
    /// interleaved and multiplied by the packed weights with vpmaddwd, a last odd tap paired with zeros.
    @inline(__always)
    static func pairSums(count: Int, weights: UnsafePointer<Int16>, _ load: (Int) -> __m256i) -> (SIMD8<Int32>, SIMD8<Int32>) {
        var (low, high) = (_mm256_setzero_si256(), _mm256_setzero_si256())
        var w = UnsafeRawPointer(weights), t = 0
        while t < count {
            let (a, b) = (load(t), t &+ 1 < count ? load(t &+ 1) : _mm256_setzero_si256())
            low = _mm256_add_epi32(low, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), _mm256_loadu_si256(w.assumingMemoryBound(to: __m256i.self))))
            high = _mm256_add_epi32(high, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b),
                                                            _mm256_loadu_si256((w + 32).assumingMemoryBound(to: __m256i.self))))
            w += 64
            t &+= 2
        }
        return inChannelOrder(low, high)
    }
    #endif

    #if KIROKU_AVX2
    /// `count` outputs along a row, their windows inside the input, `step` levels apart from
    /// `corner` (the first window's corner, at the group's channel 0): requantized into `levels`
    /// and stored `outputStep` bytes apart from `output`. Not inlined, so that the tap pairs, the
    /// sums and the requantization's vectors keep to registers.
    @inline(never)
    static func interiorRun(_ corner: UnsafePointer<Int16>, step: Int, count: Int, taps: UnsafeBufferPointer<Tap>,
                            weights: UnsafePointer<Int16>, levels: IntegerGemm.TileLevels, output: UnsafeMutableRawPointer, outputStep: Int) {
        var (corner, output) = (corner, output)
        for _ in 0..<count {
            let sums = taps.count == 9 ? interiorSums(corner, taps: taps, count: 9, weights: weights)
                : taps.count == 25 ? interiorSums(corner, taps: taps, count: 25, weights: weights)
                : interiorSums(corner, taps: taps, count: taps.count, weights: weights)
            levels.store(sums.0, half: 0, at: output)
            levels.store(sums.1, half: 1, at: output)
            corner += step
            output += outputStep
        }
    }

    /// Sums of interleaved pairs in channel order: `low` holds channels 0-3 and 8-11, `high` 4-7
    /// and 12-15, their 128-bit halves recombined.
    @inline(__always)
    static func inChannelOrder(_ low: __m256i, _ high: __m256i) -> (SIMD8<Int32>, SIMD8<Int32>) {
        let (a, b) = (unsafeBitCast(low, to: SIMD8<Int32>.self), unsafeBitCast(high, to: SIMD8<Int32>.self))
        return (SIMD8(lowHalf: a.lowHalf, highHalf: b.lowHalf), SIMD8(lowHalf: a.highHalf, highHalf: b.highHalf))
    }
    #endif

    /// The sums of 16 channels at one output position, in channel order (8 and 8): `corner` is
    /// the window's corner at the group's first channel, which may lie outside the input: each
    /// tap is checked, and one outside reads zeros.
    @inline(__always)
    static func groupSums(_ corner: UnsafePointer<Int16>, _ g: Geometry, y: Int, x: Int, taps: UnsafeBufferPointer<Tap>,
                          weights: UnsafePointer<Int16>) -> (SIMD8<Int32>, SIMD8<Int32>) {
        #if KIROKU_AVX2
        return pairSums(count: taps.count, weights: weights) { t in
            let tap = taps[t]
            guard tap.inside(g, y: y, x: x) else { return _mm256_setzero_si256() }
            return _mm256_loadu_si256(UnsafeRawPointer(corner + tap.offset).assumingMemoryBound(to: __m256i.self))
        }
        #else
        tapSums(corner, taps: taps, weights: weights) { $0.inside(g, y: y, x: x) }
        #endif
    }

    /// The portable build's sums of 16 channels over the taps `included` accepts.
    @inline(__always)
    static func tapSums(_ corner: UnsafePointer<Int16>, taps: UnsafeBufferPointer<Tap>, weights: UnsafePointer<Int16>,
                        included: (Tap) -> Bool) -> (SIMD8<Int32>, SIMD8<Int32>) {
        var sums = SIMD16<Int32>(repeating: 0)
        for (t, tap) in taps.enumerated() where included(tap) {
            for j in 0..<16 { sums[j] &+= Int32(corner[tap.offset &+ j]) &* Int32(weights[packedIndex(channel: j, tap: t)]) }
        }
        return (sums.lowHalf, sums.highHalf)
    }
}
