#if KIROKU_AVX2
/// A convolution computed from its input as it lies, with no unrolled (im2col) copy and no
/// packing per call: 6 output channels by 16 output positions at a time, in 12 vector sums that
/// stay in registers while every input channel and tap is added (2 loads and 6 broadcasts per 12
/// fused multiply-adds); in the AVX-512 build 8 channels, 8 sums of 16 lanes (1 load and 8
/// broadcasts per 8). Only in the AVX2 builds: with SSE's 16 narrower registers the sums spill.
public enum DirectConvolution {
    /// Output channels one block computes; the packed weights interleave them.
    public static let blockChannels = Sums.rows
    /// Output positions one strip computes (two vectors).
    public static let stripLength = 16

    /// For each of the first `rows` output channels r = 6b + j (b its block) and every strip:
    /// output[r * outputStride + strip.target + i] (i in 0..<16) = bias[r] + residual at the same
    /// place (if given) + the sum over input channels c and taps t of
    /// weights[((b * channels + c) * taps + t) * 6 + j] * input[c * channelStride + strip.source + tapOffsets[t] + i],
    /// clamped to `bounds` (a fused Relu or Clip; -inf...inf for none).
    ///
    /// Blocked like a matrix product: the input channels in passes of `depthChunk` (a strip's
    /// input for one pass stays in the L1 cache while every block runs over it; later passes add to
    /// the sums the earlier ones stored), the blocks in groups of `rowChunk` channels (a group's
    /// weights for one pass stay in the L2 cache across the strips). A strip's input for one pass
    /// is either copied into `panel` (depthChunk x taps x 16 floats, then read front to back) or,
    /// where `inPlaceRows` is not empty, read where it lies: row (c, t) of a pass at
    /// `inPlaceRows[c * taps + t]` (c * channelStride + tapOffsets[t]) from the strip's source.
    public static func block(input: UnsafePointer<Float>, channelStride: Int, channels: Int, tapOffsets: UnsafeBufferPointer<Int>,
                             inPlaceRows: UnsafeBufferPointer<Int>, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>, rows: Int,
                             bounds: ClosedRange<Float>, residual: UnsafePointer<Float>?, strips: UnsafeBufferPointer<(source: Int, target: Int)>,
                             output: UnsafeMutablePointer<Float>, outputStride: Int, depthChunk: Int, rowChunk: Int,
                             panel: UnsafeMutablePointer<Float>) {
        let (low, high) = (Sixteen(repeating: bounds.lowerBound), Sixteen(repeating: bounds.upperBound))
        let taps = tapOffsets.count, blockFloats = channels &* taps &* blockChannels
        for c0 in stride(from: 0, to: channels, by: depthChunk) {
            let pass = Pass(depth: min(depthChunk, channels &- c0) &* taps, first: c0 == 0, last: c0 &+ depthChunk >= channels)
            for m0 in stride(from: 0, to: rows, by: rowChunk) {
                for strip in strips {
                    let source = input + strip.source + c0 &* channelStride, stripRows: Rows
                    if inPlaceRows.isEmpty {
                        pack(source, channels: pass.depth / taps, channelStride: channelStride, tapOffsets: tapOffsets, into: panel)
                        stripRows = .packed(UnsafePointer(panel))
                    } else {
                        stripRows = .inPlace(source, inPlaceRows.baseAddress!)
                    }
                    for first in stride(from: m0, to: min(rows, m0 &+ rowChunk), by: blockChannels) {
                        let offset = first &* outputStride &+ strip.target
                        tile(stripRows, pass: pass,
                             weights: weights + first / blockChannels &* blockFloats + c0 &* taps &* blockChannels,
                             bias: bias + first, rows: min(blockChannels, rows &- first), low: low, high: high,
                             residual: residual.map { $0 + offset }, output: output + offset, outputStride: outputStride)
                    }
                }
            }
        }
    }

    /// Where a tile reads a strip's input rows for a pass: a packed panel (row k at 16k), or the
    /// input itself (row k at source + rows[k]).
    fileprivate enum Rows {
        case packed(UnsafePointer<Float>)
        case inPlace(UnsafePointer<Float>, UnsafePointer<Int>)
    }

    /// One pass over some input channels: `depth` rows (channels x taps) of the panel; the first
    /// pass starts the sums from the bias, later ones from what the pass before stored; the last
    /// adds the residual and clamps.
    private struct Pass {
        let depth: Int, first: Bool, last: Bool
    }

    /// Copies one strip's input for a pass into `panel`, row (c, t) at (c * taps + t) * 16: the
    /// tile then reads it front to back, from the L1 cache.
    @inline(__always)
    private static func pack(_ x: UnsafePointer<Float>, channels: Int, channelStride: Int, tapOffsets: UnsafeBufferPointer<Int>,
                             into panel: UnsafeMutablePointer<Float>) {
        var target = UnsafeMutableRawPointer(panel), x = x
        for _ in 0..<channels {
            for offset in tapOffsets {
                target.storeSixteen(UnsafeRawPointer(x + offset).loadSixteen())
                target += 64
            }
            x += channelStride
        }
    }

    /// One block of channels by one strip for one pass, from its input rows; `output` and
    /// `residual` the block's first output channel's place.
    @inline(__always)
    private static func tile(_ input: Rows, pass: Pass, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                             rows: Int, low: Sixteen, high: Sixteen, residual: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>,
                             outputStride: Int) {
        let start = { (row: Int) -> Sixteen in
            guard !pass.first else { return Sixteen(repeating: bias[row]) }
            guard row < rows else { return Sixteen() }
            return UnsafeRawPointer(output + row &* outputStride).loadSixteen()
        }
        var sums = Sums(start)
        // A last block of fewer channels (16 = 6 + 6 + 4, 32 = 5 x 6 + 2) skips the other rows' work.
        switch rows {
        case ...2: sums.accumulate(input, weights: weights, depth: pass.depth, rows: 2)
        case ...4: sums.accumulate(input, weights: weights, depth: pass.depth, rows: 4)
        #if KIROKU_AVX512
        case ...6: sums.accumulate(input, weights: weights, depth: pass.depth, rows: 6)
        default: sums.accumulate(input, weights: weights, depth: pass.depth, rows: 8)
        #else
        default: sums.accumulate(input, weights: weights, depth: pass.depth, rows: 6)
        #endif
        }
        let finish = { (sum: Sixteen, row: Int) in
            let offset = row &* outputStride
            if pass.last {
                store(sum, at: output + offset, adding: residual.map { $0 + offset }, low: low, high: high)
            } else {
                UnsafeMutableRawPointer(output + offset).storeSixteen(sum)
            }
        }
        sums.forEach(rows: rows, finish)
    }

    /// A pointwise convolution over a small plane, the other way round: 5 or 6 positions by 16
    /// output channels at a time (a plane of 49 positions is 4 tiles of 6 and 5 of 5, where strips
    /// of 16 would compute 64). `panels`: the input packed by `packPositions`, tile after tile;
    /// `weights`: [block of 16 channels][input channel][16]; for each block b of 16 output channels
    /// in `blocks` and each tile of `count` (5 or 6) positions from `position`:
    /// output[(16b + c) * plane + position + j] = clamp(bias[16b + c] + residual at the same place
    /// + the sum over input channels k of weights[(b * channels + k) * 16 + c] * input[k * plane + position + j]).
    public static func transposed(panels: UnsafePointer<Float>, channels: Int, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                  blocks: Range<Int>, bounds: ClosedRange<Float>, residual: UnsafePointer<Float>?,
                                  tiles: UnsafeBufferPointer<(position: Int, count: Int)>, output: UnsafeMutablePointer<Float>, plane: Int) {
        let (low, high) = (bounds.lowerBound, bounds.upperBound)
        for b in blocks {
            let start = UnsafeRawPointer(bias + b &* transposedChannels).loadSixteen()
            let blockWeights = weights + b &* channels &* transposedChannels
            var panel = panels
            for tile in tiles {
                var sums = Sums { _ in start }
                if tile.count == transposedPositions {
                    sums.accumulate(broadcasting: panel, times: blockWeights, depth: channels, rows: 6, step: 6)
                } else {
                    sums.accumulate(broadcasting: panel, times: blockWeights, depth: channels, rows: 5, step: 5)
                }
                panel += channels &* tile.count
                let offset = b &* transposedChannels &* plane &+ tile.position
                let emit = { (sum: Sixteen, j: Int) in
                    for c in 0..<transposedChannels {
                        let at = c &* plane &+ j
                        var value = sum[c]
                        if let residual { value += residual[offset &+ at] }
                        output[offset &+ at] = Swift.min(Swift.max(value, low), high)
                    }
                }
                emit(sums.s0, 0)
                emit(sums.s1, 1)
                emit(sums.s2, 2)
                emit(sums.s3, 3)
                emit(sums.s4, 4)
                if tile.count == transposedPositions { emit(sums.s5, 5) }
            }
        }
    }

    /// Output channels of one `transposed` tile.
    public static let transposedChannels = 16
    /// Positions of one `transposed` tile, at most (the others have one fewer).
    public static let transposedPositions = 6

    /// Packs the positions of every tile for `transposed`, tile after tile from `panels`: a tile
    /// of n positions from p holds input channel k's at [k * n + j] = input[k * plane + p + j].
    /// Writes nothing outside the tiles' panels (threads pack neighbouring tiles at once) and reads
    /// nothing past the input.
    public static func packPositions(_ input: UnsafePointer<Float>, channels: Int, plane: Int,
                                     tiles: UnsafeBufferPointer<(position: Int, count: Int)>, into panels: UnsafeMutablePointer<Float>) {
        var target = panels
        for tile in tiles {
            var source = input + tile.position
            // 8 floats moved for the tile's 5 or 6, the extra ones overwritten by the next channel's.
            for _ in 0..<channels &- 1 {
                UnsafeMutableRawPointer(target).storeBytes(of: UnsafeRawPointer(source).loadUnaligned(as: SIMD8<Float>.self), as: SIMD8<Float>.self)
                target += tile.count
                source += plane
            }
            for j in 0..<tile.count { target[j] = source[j] }
            target += tile.count
        }
    }

    /// The sums of a tile: `Sums.rows` rows of 16, s_r the r-th broadcast row times the 16 floats
    /// of each vector row: 6 rows of two halves in the AVX2 build (12 registers), 8 rows of one
    /// register in the AVX-512 build (the fewest that cover the multiply-add's latency on two
    /// units; with 12, the compiler kept the sums in memory: 1.5x slower).
    struct Sums {
        var s0, s1, s2, s3, s4, s5: Sixteen
        #if KIROKU_AVX512
        var s6, s7: Sixteen
        /// Rows a tile may have.
        static let rows = 8
        #else
        /// Rows a tile may have.
        static let rows = 6
        #endif

        /// Row r's sums starting from start(r).
        @inline(__always)
        init(_ start: (Int) -> Sixteen) {
            (s0, s1, s2, s3, s4, s5) = (start(0), start(1), start(2), start(3), start(4), start(5))
            #if KIROKU_AVX512
            (s6, s7) = (start(6), start(7))
            #endif
        }

        /// For each of `depth` steps k: the first `rows` (1 to `Sums.rows`, a constant where inlined, so the
        /// unused rows' sums are never touched and their floats never read) of the floats at
        /// broadcasts[step * k + rowStride * r] times the 16 at vectors[16k...].
        @inline(__always)
        mutating func accumulate(broadcasting broadcasts: UnsafePointer<Float>, times vectors: UnsafePointer<Float>, depth: Int,
                                 rows: Int, step: Int, rowStride: Int = 1) {
            var w = broadcasts, p = UnsafeRawPointer(vectors)
            for _ in 0..<depth {
                add(broadcasting: w, times: p.loadSixteen(), rows: rows, rowStride: rowStride)
                w += step
                p += 64
            }
        }

        #if KIROKU_AVX512
        /// The same for two sets of vectors at once, these sums with `vectors` and `other` with
        /// `otherVectors` (16 sums: the multiply-add's latency covered twice over).
        @inline(__always)
        mutating func accumulate(broadcasting broadcasts: UnsafePointer<Float>, times vectors: UnsafePointer<Float>,
                                 alongside other: inout Sums, otherVectors: UnsafePointer<Float>, depth: Int, rows: Int, rowStride: Int) {
            var w = broadcasts, p = UnsafeRawPointer(vectors), q = UnsafeRawPointer(otherVectors)
            for _ in 0..<depth {
                add(broadcasting: w, times: p.loadSixteen(), rows: rows, rowStride: rowStride)
                other.add(broadcasting: w, times: q.loadSixteen(), rows: rows, rowStride: rowStride)
                w += 1
                p += 64
                q += 64
            }
        }
        #endif

        /// A tile's steps: the first `rows` of its block's weights per step times the strip's input rows.
        @inline(__always)
        fileprivate mutating func accumulate(_ input: Rows, weights: UnsafePointer<Float>, depth: Int, rows: Int) {
            switch input {
            case .packed(let panel):
                accumulate(broadcasting: weights, times: panel, depth: depth, rows: rows, step: blockChannels)
            case .inPlace(let source, let offsets):
                accumulate(broadcasting: weights, gathering: source, at: offsets, depth: depth, rows: rows, step: blockChannels)
            }
        }

        /// The same with the 16 floats of step k at source[offsets[k]...].
        @inline(__always)
        mutating func accumulate(broadcasting broadcasts: UnsafePointer<Float>, gathering source: UnsafePointer<Float>,
                                 at offsets: UnsafePointer<Int>, depth: Int, rows: Int, step: Int) {
            var w = broadcasts
            for k in 0..<depth {
                add(broadcasting: w, times: UnsafeRawPointer(source + offsets[k]).loadSixteen(), rows: rows)
                w += step
            }
        }

        /// One step: the first `rows` floats at w (`rowStride` apart), each times x, added to their row's sums.
        @inline(__always)
        mutating func add(broadcasting w: UnsafePointer<Float>, times x: Sixteen, rows: Int, rowStride: Int = 1) {
            s0 = multiplyAdd(s0, w[0], x)
            if rows > 1 { s1 = multiplyAdd(s1, w[rowStride], x) }
            if rows > 2 { s2 = multiplyAdd(s2, w[2 &* rowStride], x) }
            if rows > 3 { s3 = multiplyAdd(s3, w[3 &* rowStride], x) }
            if rows > 4 { s4 = multiplyAdd(s4, w[4 &* rowStride], x) }
            if rows > 5 { s5 = multiplyAdd(s5, w[5 &* rowStride], x) }
            #if KIROKU_AVX512
            if rows > 6 { s6 = multiplyAdd(s6, w[6 &* rowStride], x) }
            if rows > 7 { s7 = multiplyAdd(s7, w[7 &* rowStride], x) }
            #endif
        }

        /// Calls body(sums of row r, r) for each r below `rows`, unrolled (an index chosen at run
        /// time would keep the sums in memory rather than in registers).
        @inline(__always)
        func forEach(rows: Int, _ body: (Sixteen, Int) -> Void) {
            body(s0, 0)
            if rows > 1 { body(s1, 1) }
            if rows > 2 { body(s2, 2) }
            if rows > 3 { body(s3, 3) }
            if rows > 4 { body(s4, 4) }
            if rows > 5 { body(s5, 5) }
            #if KIROKU_AVX512
            if rows > 6 { body(s6, 6) }
            if rows > 7 { body(s7, 7) }
            #endif
        }
    }

    /// Stores 16 finished sums at `target`, plus the 16 values at `other` if given, clamped.
    @inline(__always)
    private static func store(_ sum: Sixteen, at target: UnsafeMutablePointer<Float>, adding other: UnsafePointer<Float>?,
                              low: Sixteen, high: Sixteen) {
        var sum = sum
        if let other { sum += UnsafeRawPointer(other).loadSixteen() }
        UnsafeMutableRawPointer(target).storeSixteen(clamped(sum, low, high))
    }
}
#endif
