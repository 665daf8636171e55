#if KIROKU_AVX2
import _Builtin_intrinsics.intel
#endif

/// How the int32 sums of an integer convolution or matrix product become its output: the real
/// value is sum · scale[c] + offset[c] for output channel c. A quantized output stores that value
/// rounded to the nearest level (halves to even) and clamped to `bounds`, as a centred level (the
/// level minus the output's zero point, so that zero padding is the zero point); a float output
/// stores it as it is.
struct Requantization {
    let scale: UnsafePointer<Float>
    let offset: UnsafePointer<Float>
    /// The centred levels the output may take (the 8-bit range with a fused Relu or Clip); nil for float output.
    let bounds: ClosedRange<Int32>?
    /// A gated activation of the value before it is stored or rounded; nil for none.
    let gate: Gate?
}

/// A gated activation an integer kernel computes on each output value v (sum · scale + offset, in
/// the output's units) before storing it, before rounding where it stores levels: v · σ(s · v)
/// (SiLU), or where `hard`, v · clamp(s · v / 6 + 1/2, 0, 1) (hard-swish); s, `scale`, is the
/// output's quantization scale, which makes v real (1 for float output).
public typealias Gate = (hard: Bool, scale: Float)

/// What a tile's store applies to its values before storing them, as a type of its own so that a
/// loop without a gate carries no check of one (an optional gate checked at every store cost
/// EfficientNet-Lite0's int8 pointwise layers 2-3%).
protocol TileGate {
    /// The gated values of 8 channels.
    func callAsFunction(_ value: SIMD8<Float>) -> SIMD8<Float>
    #if KIROKU_VNNI
    /// The gated values of 16 channels.
    func callAsFunction(_ value: Vector) -> Vector
    #endif
}

/// No gate: values stored as they are.
struct Ungated: TileGate {
    @inline(__always) func callAsFunction(_ value: SIMD8<Float>) -> SIMD8<Float> { value }
    #if KIROKU_VNNI
    @inline(__always) func callAsFunction(_ value: Vector) -> Vector { value }
    #endif
}

/// A gate (see `Gate`).
struct Gated: TileGate {
    let gate: Gate
    @inline(__always) func callAsFunction(_ value: SIMD8<Float>) -> SIMD8<Float> { gated(value, gate) }
    #if KIROKU_VNNI
    @inline(__always) func callAsFunction(_ value: Vector) -> Vector { gated(value, gate) }
    #endif
}

/// `gate` applied to a vector of values (8; 16 in the VNNI build), the same bits in every build
/// (its multiply-adds fused in each, every operation lane by lane).
@inline(__always)
func gated(_ value: Vector, _ gate: Gate) -> Vector {
    let x = value * gate.scale
    guard gate.hard else { return value / (1 + exponential(-x, everyBuild: true)) }
    let g = x / 6 + 0.5
    return value * g.replacing(with: 0, where: g .< 0).replacing(with: 1, where: g .> 1)
}

#if KIROKU_VNNI
/// `gate` applied to 8 values, in the lower half of a 16-lane vector.
@inline(__always)
func gated(_ value: SIMD8<Float>, _ gate: Gate) -> SIMD8<Float> { gated(Vector(lowHalf: value, highHalf: value), gate).lowHalf }
#endif

/// Where an integer kernel writes row r (an output position), channel c: int16 centred levels at
/// `base` + r · rowStride + c (positions by channels, NHWC), or floats at base + r · rowStride +
/// c · channelStride.
struct IntegerOutput {
    let base: UnsafeMutableRawPointer
    let rowStride: Int, channelStride: Int
}

/// How a tile of 16 output channels' sums are stored: as levels (IntegerGemm.TileLevels) or floats (TileFloats).
protocol TileStore {
    /// Stores half `half` (channels 0-7 or 8-15) of the tile's sums at `target` (its channel 0).
    func store(_ sums: SIMD8<Int32>, half: Int, at target: UnsafeMutableRawPointer)
    /// Stores both halves of the tile's sums (channels 0-7, 8-15) at `target`.
    func store(_ low: SIMD8<Int32>, _ high: SIMD8<Int32>, at target: UnsafeMutableRawPointer)
}

/// An int16 matrix product: rows of centred activation levels (an output position's inputs, one
/// row of NHWC or of an unrolled window) times 8-bit weights widened to int16, summed in int32,
/// so no product or pair of products ever saturates (AVX2's vpmaddwd: two products per lane,
/// added exactly). The weights are packed [tile of 16 output channels][pair of inputs][16][2]; a
/// tile of 6 rows keeps 12 sums in registers. Wider tiles (4 rows by 24 channels, 3 by 32) need a
/// 17th register in this loop and spilled a sum on EfficientNet-Lite0 (up to 1.8x slower there).
public enum IntegerGemm {
    /// Output channels per packed tile.
    public static let tileChannels = 16

    /// For rows `rows` of `a` (row r at a + r · lda, `pairs` pairs of values each) and each tile
    /// in `tiles`: output[r][c] = requantized(sum over k of a[r][k] · w[c][k]) for the tile's
    /// channels below `channels` (Requantization: `scale`, `offset` per channel, `bounds` nil for
    /// float output; `gate` an activation before the store; IntegerOutput: `output` with its `strides`).
    public static func run(a: UnsafePointer<Int16>, lda: Int, rows: Range<Int>, pairs: Int, weights: UnsafePointer<Int16>,
                           tiles: Range<Int>, channels: Int, scale: UnsafePointer<Float>, offset: UnsafePointer<Float>,
                           bounds: ClosedRange<Int32>?, gate: Gate?, output base: UnsafeMutableRawPointer, strides: (row: Int, channel: Int)) {
        tilesByRows(rows: rows, tiles: tiles, channels: channels, Requantization(scale: scale, offset: offset, bounds: bounds, gate: gate),
                    IntegerOutput(base: base, rowStride: strides.row, channelStride: strides.channel),
                    six: { r, tile, body in sixRows(a + r &* lda, lda: lda, pairs: pairs, weights: weights + tile &* pairs &* 32, body) },
                    one: { r, tile, body in oneRow(a + r &* lda, pairs: pairs, weights: weights + tile &* pairs &* 32, body) })
    }

    /// The walk both products (this one and ByteGemm's) share: for each tile, `six(row, tile, body)`
    /// on six rows at a time from `row`, then `one(row, tile, body)` on each row left, every sum
    /// of 8 channels they pass to `body` stored (levels of a whole tile with its parameters loaded once).
    @inline(__always)
    static func tilesByRows(rows: Range<Int>, tiles: Range<Int>, channels: Int, _ requantization: Requantization, _ output: IntegerOutput,
                            six: (Int, Int, (Int, Int, SIMD8<Int32>) -> Void) -> Void, one: (Int, Int, (Int, SIMD8<Int32>) -> Void) -> Void) {
        for tile in tiles {
            let first = tile &* 16
            var r = rows.lowerBound
            if let bounds = requantization.bounds, first &+ 16 <= channels, output.channelStride == 1 {
                // Levels of a whole tile: its scales, offsets and bounds loaded once.
                let (scale, offset, target) = (requantization.scale + first, requantization.offset + first, output.base + first &* 2)
                func wholeRows<G: TileGate>(_ levels: TileLevels<G>) {
                    while r &+ 6 <= rows.upperBound {
                        six(r, tile) { row, half, sums in levels.store(sums, half: half, at: target + (r &+ row) &* output.rowStride &* 2) }
                        r &+= 6
                    }
                }
                if let gate = requantization.gate {
                    wholeRows(TileLevels(scale: scale, offset: offset, bounds: bounds, gate: Gated(gate: gate)))
                } else {
                    wholeRows(TileLevels(scale: scale, offset: offset, bounds: bounds, gate: Ungated()))
                }
            }
            while r &+ 6 <= rows.upperBound {
                six(r, tile) { row, half, sums in
                    store(sums, row: r &+ row, channel: first &+ 8 &* half, channels: channels, requantization, output)
                }
                r &+= 6
            }
            while r < rows.upperBound {
                one(r, tile) { half, sums in store(sums, row: r, channel: first &+ 8 &* half, channels: channels, requantization, output) }
                r &+= 1
            }
        }
    }

    /// The requantization of one tile of 16 channels into levels, its parameters in registers.
    struct TileLevels<G: TileGate>: TileStore {
        let values: TileFloats<G>
        let low: SIMD8<Float>, high: SIMD8<Float>

        @inline(__always)
        init(scale: UnsafePointer<Float>, offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>, gate: G) {
            values = TileFloats(scale: scale, offset: offset, gate: gate)
            (low, high) = (SIMD8(repeating: Float(bounds.lowerBound)), SIMD8(repeating: Float(bounds.upperBound)))
        }

        /// Stores the levels of half `half` (channels 0-7 or 8-15) of the tile at `target` (its channel 0).
        @inline(__always)
        func store(_ sums: SIMD8<Int32>, half: Int, at target: UnsafeMutableRawPointer) {
            (target + half &* 16).storeBytes(of: Requantized.levels(values.values(sums, half: half), low: low, high: high), as: SIMD8<Int16>.self)
        }

        /// Stores the levels of both halves of the tile at `target`.
        @inline(__always)
        func store(_ low: SIMD8<Int32>, _ high: SIMD8<Int32>, at target: UnsafeMutableRawPointer) {
            let (first, second) = values.values(low, high)
            target.storeBytes(of: Requantized.levels(first, low: self.low, high: self.high), as: SIMD8<Int16>.self)
            (target + 16).storeBytes(of: Requantized.levels(second, low: self.low, high: self.high), as: SIMD8<Int16>.self)
        }
    }

    /// One tile of 16 channels' sums as floats (sum · scale + offset, then `gate`), its parameters in registers.
    struct TileFloats<G: TileGate>: TileStore {
        let scale: (SIMD8<Float>, SIMD8<Float>), offset: (SIMD8<Float>, SIMD8<Float>)
        let gate: G

        @inline(__always)
        init(scale: UnsafePointer<Float>, offset: UnsafePointer<Float>, gate: G) {
            let (s, o) = (UnsafeRawPointer(scale), UnsafeRawPointer(offset))
            self.scale = (s.loadUnaligned(as: SIMD8<Float>.self), s.loadUnaligned(fromByteOffset: 32, as: SIMD8<Float>.self))
            self.offset = (o.loadUnaligned(as: SIMD8<Float>.self), o.loadUnaligned(fromByteOffset: 32, as: SIMD8<Float>.self))
            self.gate = gate
        }

        /// The values of half `half` (channels 0-7 or 8-15) of the tile's sums, before the gate.
        @inline(__always)
        func ungated(_ sums: SIMD8<Int32>, half: Int) -> SIMD8<Float> {
            half == 0 ? Requantized.floats(sums) * scale.0 + offset.0 : Requantized.floats(sums) * scale.1 + offset.1
        }

        /// The values of half `half` (channels 0-7 or 8-15) of the tile's sums.
        @inline(__always)
        func values(_ sums: SIMD8<Int32>, half: Int) -> SIMD8<Float> { gate(ungated(sums, half: half)) }

        /// The values of both halves of the tile's sums (the VNNI build gates all 16 at once).
        @inline(__always)
        func values(_ low: SIMD8<Int32>, _ high: SIMD8<Int32>) -> (SIMD8<Float>, SIMD8<Float>) {
            #if KIROKU_VNNI
            let value = gate(Vector(lowHalf: ungated(low, half: 0), highHalf: ungated(high, half: 1)))
            return (value.lowHalf, value.highHalf)
            #else
            return (values(low, half: 0), values(high, half: 1))
            #endif
        }

        /// Stores the floats of half `half` (channels 0-7 or 8-15) of the tile at `target` (its channel 0).
        @inline(__always)
        func store(_ sums: SIMD8<Int32>, half: Int, at target: UnsafeMutableRawPointer) {
            (target + half &* 32).storeBytes(of: values(sums, half: half), as: SIMD8<Float>.self)
        }

        /// Stores the floats of both halves of the tile at `target`.
        @inline(__always)
        func store(_ low: SIMD8<Int32>, _ high: SIMD8<Int32>, at target: UnsafeMutableRawPointer) {
            let (first, second) = values(low, high)
            target.storeBytes(of: first, as: SIMD8<Float>.self)
            (target + 32).storeBytes(of: second, as: SIMD8<Float>.self)
        }
    }

    /// Six rows by one tile: 12 sums of 8 channels, `body(row, half, sums)` for each.
    @inline(__always)
    static func sixRows(_ a: UnsafePointer<Int16>, lda: Int, pairs: Int, weights: UnsafePointer<Int16>,
                        _ body: (Int, Int, SIMD8<Int32>) -> Void) {
        #if KIROKU_AVX2
        sixRowTile(EvenRows(a: UnsafeRawPointer(a), rowBytes: lda &* 2), from: 0, steps: pairs, weights: UnsafeRawPointer(weights), next: 32,
                   start: (_mm256_setzero_si256(), _mm256_setzero_si256()), accumulate: addPairProducts) { row, half, sums in
            body(row, half, unsafeBitCast(sums, to: SIMD8<Int32>.self))
        }
        #else
        for row in 0..<6 {
            oneRow(a + row &* lda, pairs: pairs, weights: weights) { half, sums in body(row, half, sums) }
        }
        #endif
    }

    /// One row by one tile: two sums of 8 channels, `body(half, sums)` for each.
    @inline(__always)
    static func oneRow(_ a: UnsafePointer<Int16>, pairs: Int, weights: UnsafePointer<Int16>, _ body: (Int, SIMD8<Int32>) -> Void) {
        #if KIROKU_AVX2
        oneRowTile(UnsafeRawPointer(a), steps: pairs, weights: UnsafeRawPointer(weights),
                   start: (_mm256_setzero_si256(), _mm256_setzero_si256()), accumulate: addPairProducts, body)
        #else
        var sums = SIMD16<Int32>(repeating: 0)
        var w = weights
        for k in 0..<pairs {
            let x0 = Int32(a[2 &* k]), x1 = Int32(a[2 &* k &+ 1])
            for j in 0..<16 { sums[j] &+= x0 &* Int32(w[2 &* j]) &+ x1 &* Int32(w[2 &* j &+ 1]) }
            w += 32
        }
        body(0, sums.lowHalf)
        body(1, sums.highHalf)
        #endif
    }

    /// Stores 8 channels' sums from `channel` on (those below `channels`) of output row `row`.
    @inline(__always)
    static func store(_ sums: SIMD8<Int32>, row: Int, channel: Int, channels: Int, _ requantization: Requantization,
                      _ output: IntegerOutput) {
        guard channel < channels else { return }
        let count = min(8, channels &- channel)
        if count == 8 {
            let scale = UnsafeRawPointer(requantization.scale + channel).loadUnaligned(as: SIMD8<Float>.self)
            let offset = UnsafeRawPointer(requantization.offset + channel).loadUnaligned(as: SIMD8<Float>.self)
            let sum = Requantized.floats(sums) * scale + offset, value = requantization.gate.map { gated(sum, $0) } ?? sum
            if let bounds = requantization.bounds {
                let levels = Requantized.levels(value, bounds: bounds)
                (output.base + (row &* output.rowStride &+ channel) &* 2).storeBytes(of: levels, as: SIMD8<Int16>.self)
            } else {
                let target = output.base.assumingMemoryBound(to: Float.self) + row &* output.rowStride
                for j in 0..<8 { target[(channel &+ j) &* output.channelStride] = value[j] }
            }
            return
        }
        for j in 0..<count {
            let c = channel &+ j, sum = Float(sums[j]) * requantization.scale[c] + requantization.offset[c]
            let value = requantization.gate.map { gated(SIMD8(repeating: sum), $0)[0] } ?? sum
            if let bounds = requantization.bounds {
                output.base.assumingMemoryBound(to: Int16.self)[row &* output.rowStride &+ c] = Requantized.level(value, bounds: bounds)
            } else {
                output.base.assumingMemoryBound(to: Float.self)[row &* output.rowStride &+ c &* output.channelStride] = value
            }
        }
    }
}

/// Where the rows of a product's left operand lie: evenly apart, or (a direct convolution's) each
/// output position's window, read from each of its taps in turn.
protocol ProductRows {
    /// Row r's first byte.
    func callAsFunction(_ r: Int) -> UnsafeRawPointer
    /// Byte offsets from a row's start where its inputs run, one run after another; nil for one run from the start.
    var taps: UnsafeBufferPointer<Int>? { get }
}

/// Rows `rowBytes` apart from `a`, each one run.
struct EvenRows: ProductRows {
    let a: UnsafeRawPointer, rowBytes: Int
    var taps: UnsafeBufferPointer<Int>? { nil }
    @inline(__always) func callAsFunction(_ r: Int) -> UnsafeRawPointer { a + r &* rowBytes }
}

#if KIROKU_AVX2
/// sum + a · b in pairs of int16 lanes added into int32 lanes (vpmaddwd then vpaddd): IntegerGemm's step.
@inline(__always)
func addPairProducts(_ sum: __m256i, _ a: __m256i, _ b: __m256i) -> __m256i {
    _mm256_add_epi32(sum, _mm256_madd_epi16(a, b))
}

/// The vectors of int32 sums `sixRowTile` keeps: 8 lanes in 256 bits, or in the VNNI build 16 in 512.
protocol SumLanes {
    /// The vector at `p`.
    static func loaded(_ p: UnsafeRawPointer) -> Self
    /// `value` (four bytes of a row) in every 32-bit lane.
    static func broadcast(_ value: Int32) -> Self
}

extension SIMD4: SumLanes where Scalar == Int64 {
    @inline(__always) static func loaded(_ p: UnsafeRawPointer) -> Self { _mm256_loadu_si256(p.assumingMemoryBound(to: __m256i.self)) }
    @inline(__always) static func broadcast(_ value: Int32) -> Self { _mm256_set1_epi32(value) }
}

#if KIROKU_VNNI
extension SIMD8: SumLanes where Scalar == Int64 {
    @inline(__always) static func loaded(_ p: UnsafeRawPointer) -> Self { _mm512_loadu_si512(p) }
    @inline(__always) static func broadcast(_ value: Int32) -> Self { _mm512_set1_epi32(value) }
}
#endif

/// Six rows by two vectors of sums, the 12 sums the products share (one tile of 16 output
/// channels as two halves of 8, or in 512 bits two tiles): each of `steps` steps takes the next 4
/// bytes of each row (rows `first` to `first` + 5 of `a`), broadcast, and the vectors of weights at w
/// and w + `next` (w from `weights`, 64 bytes on each step), into `accumulate(sum, row bytes,
/// weights)`; the sums of every row start at `start`. Then `body(row, vector, sums)` for each.
/// Where `a` has taps, the steps run from each tap in turn, the weights going on from one tap's
/// to the next's. (A VNNI instruction goes in as a closure that calls it: passed by name, the
/// generic loop called the C function out of line, GoogLeNet's int8 3.8 times slower.)
@inline(__always)
func sixRowTile<Sums: SumLanes, Rows: ProductRows>(_ a: Rows, from first: Int, steps: Int, weights: UnsafeRawPointer, next: Int, start: (Sums, Sums),
                                                   accumulate: (Sums, Sums, Sums) -> Sums, _ body: (Int, Int, Sums) -> Void) {
    var (s0, s1) = start
    var (s2, s3, s4, s5, s6, s7, s8, s9, s10, s11) = (s0, s1, s0, s1, s0, s1, s0, s1, s0, s1)
    let rows = (a(first), a(first &+ 1), a(first &+ 2), a(first &+ 3), a(first &+ 4), a(first &+ 5)), taps = a.taps
    var w = weights
    for tap in 0..<(taps?.count ?? 1) {
        var offset = taps?[tap] ?? 0
        for _ in 0..<steps {
            let (w0, w1) = (Sums.loaded(w), Sums.loaded(w + next))
            var x = Sums.broadcast(rows.0.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            s0 = accumulate(s0, x, w0); s1 = accumulate(s1, x, w1)
            x = Sums.broadcast(rows.1.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            s2 = accumulate(s2, x, w0); s3 = accumulate(s3, x, w1)
            x = Sums.broadcast(rows.2.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            s4 = accumulate(s4, x, w0); s5 = accumulate(s5, x, w1)
            x = Sums.broadcast(rows.3.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            s6 = accumulate(s6, x, w0); s7 = accumulate(s7, x, w1)
            x = Sums.broadcast(rows.4.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            s8 = accumulate(s8, x, w0); s9 = accumulate(s9, x, w1)
            x = Sums.broadcast(rows.5.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            s10 = accumulate(s10, x, w0); s11 = accumulate(s11, x, w1)
            w += 64
            offset &+= 4
        }
    }
    body(0, 0, s0); body(0, 1, s1); body(1, 0, s2); body(1, 1, s3); body(2, 0, s4); body(2, 1, s5)
    body(3, 0, s6); body(3, 1, s7); body(4, 0, s8); body(4, 1, s9); body(5, 0, s10); body(5, 1, s11)
}

/// One row by one tile, as `sixRowTile`: two sums of 8 channels, `body(half, sums)` for each.
@inline(__always)
func oneRowTile(_ a: UnsafeRawPointer, steps: Int, taps: UnsafeBufferPointer<Int>? = nil, weights: UnsafeRawPointer, start: (__m256i, __m256i),
                accumulate: (__m256i, __m256i, __m256i) -> __m256i, _ body: (Int, SIMD8<Int32>) -> Void) {
    var (s0, s1) = start
    var w = weights
    for tap in 0..<(taps?.count ?? 1) {
        let row = a + (taps?[tap] ?? 0)
        for step in 0..<steps {
            let x = _mm256_set1_epi32(row.loadUnaligned(fromByteOffset: step &* 4, as: Int32.self))
            s0 = accumulate(s0, x, _mm256_loadu_si256(w.assumingMemoryBound(to: __m256i.self)))
            s1 = accumulate(s1, x, _mm256_loadu_si256((w + 32).assumingMemoryBound(to: __m256i.self)))
            w += 64
        }
    }
    body(0, unsafeBitCast(s0, to: SIMD8<Int32>.self))
    body(1, unsafeBitCast(s1, to: SIMD8<Int32>.self))
}
#endif

/// Rounding to quantization levels, the same in every build: nearest, halves to even, as ONNX's
/// QuantizeLinear rounds, then clamped.
public enum Requantized {
    /// The levels of 8 values.
    @inline(__always)
    public static func levels(_ value: SIMD8<Float>, bounds: ClosedRange<Int32>) -> SIMD8<Int16> {
        levels(value, low: SIMD8(repeating: Float(bounds.lowerBound)), high: SIMD8(repeating: Float(bounds.upperBound)))
    }

    /// The levels of 8 values between `low` and `high` (levels, as floats).
    @inline(__always)
    public static func levels(_ value: SIMD8<Float>, low: SIMD8<Float>, high: SIMD8<Float>) -> SIMD8<Int16> {
        #if KIROKU_AVX2
        // Clamped in float, then rounded by the default rounding mode (nearest, halves to even).
        let limited = _mm256_min_ps(_mm256_max_ps(value, low), high)
        let levels = unsafeBitCast(_mm256_cvtps_epi32(limited), to: SIMD8<Int32>.self)
        let packed = _mm_packs_epi32(unsafeBitCast(levels.lowHalf, to: __m128i.self), unsafeBitCast(levels.highHalf, to: __m128i.self))
        return unsafeBitCast(packed, to: SIMD8<Int16>.self)
        #else
        var result = SIMD8<Int16>()
        for j in 0..<8 { result[j] = Int16(Float.minimum(Float.maximum(value[j], low[j]), high[j]).rounded(.toNearestOrEven)) }
        return result
        #endif
    }

    /// 8 levels as floats.
    @inline(__always)
    public static func floats(levels: SIMD8<Int16>) -> SIMD8<Float> {
        #if KIROKU_AVX2
        floats(unsafeBitCast(_mm256_cvtepi16_epi32(unsafeBitCast(levels, to: __m128i.self)), to: SIMD8<Int32>.self))
        #else
        SIMD8(Float(levels[0]), Float(levels[1]), Float(levels[2]), Float(levels[3]), Float(levels[4]), Float(levels[5]), Float(levels[6]),
              Float(levels[7]))
        #endif
    }

    /// 8 sums as floats.
    @inline(__always)
    public static func floats(_ sums: SIMD8<Int32>) -> SIMD8<Float> {
        #if KIROKU_AVX2
        _mm256_cvtepi32_ps(unsafeBitCast(sums, to: __m256i.self))
        #else
        SIMD8(Float(sums[0]), Float(sums[1]), Float(sums[2]), Float(sums[3]), Float(sums[4]), Float(sums[5]), Float(sums[6]), Float(sums[7]))
        #endif
    }

    /// The level of one value.
    @inline(__always)
    public static func level(_ value: Float, bounds: ClosedRange<Int32>) -> Int16 {
        // minimum and maximum take a NaN as missing: it becomes the lower bound, as in the vector code.
        Int16(Float.minimum(Float.maximum(value, Float(bounds.lowerBound)), Float(bounds.upperBound)).rounded(.toNearestOrEven))
    }
}
