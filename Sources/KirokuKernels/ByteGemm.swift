#if KIROKU_AVX2
import _Builtin_intrinsics.intel
#endif
#if KIROKU_VNNI
import CVNNI
#endif

/// An 8-bit matrix product for CPUs with VNNI (vpdpbusd: four unsigned-by-signed byte products
/// added exactly into each int32 lane, one instruction): rows of unsigned bytes, an activation's
/// centred levels plus a shift that makes them 0...255, times signed 8-bit weights. Each sum
/// starts at minus the shift's share (shift · the channel's weight sum), so the sums are
/// IntegerGemm's exactly, and so is their requantization. Weights are packed [tile of 16 output
/// channels][quad of inputs][16][4]; a tile of 6 rows keeps 12 sums in 256-bit registers, or in the
/// VNNI build, for levels, six rows by two tiles 12 sums in 512-bit ones.
public enum ByteGemm {
    /// The instructions this build's products use: "vnni"; "avx2" (plain Swift products, AVX2
    /// conversion; a build no kernel set calls) or "portable" (plain Swift, the reference the
    /// tests hold the VNNI build to).
    #if KIROKU_VNNI
    public static let instructions = "vnni"
    #elseif KIROKU_AVX2
    public static let instructions = "avx2"
    #else
    public static let instructions = "portable"
    #endif

    /// Where weight `input` of output channel `channel` goes in the packed weights of rows of `quads` quads.
    public static func packedIndex(channel: Int, input: Int, quads: Int) -> Int {
        (channel / 16 * quads + input / 4) * 64 + channel % 16 * 4 + input % 4
    }

    /// Rows 0..<count of `inputs` centred levels (row r at a + r · lda) as bytes (level + shift),
    /// row r at target + r · stride, zero from `inputs` to `stride`.
    public static func bytes(_ a: UnsafePointer<Int16>, lda: Int, count: Int, inputs: Int, shift: Int16,
                             into target: UnsafeMutablePointer<UInt8>, stride: Int) {
        for r in 0..<count {
            let (source, row) = (UnsafeRawPointer(a + r &* lda), UnsafeMutableRawPointer(target + r &* stride))
            var i = 0
            #if KIROKU_AVX2
            // Shifted levels lie in 0...255: packing with unsigned saturation keeps them as they are.
            let shifts = _mm_set1_epi16(shift)
            while i &+ 16 <= inputs {
                let low = _mm_add_epi16(_mm_loadu_si128((source + i &* 2).assumingMemoryBound(to: __m128i.self)), shifts)
                let high = _mm_add_epi16(_mm_loadu_si128((source + (i &* 2 &+ 16)).assumingMemoryBound(to: __m128i.self)), shifts)
                _mm_storeu_si128((row + i).assumingMemoryBound(to: __m128i.self), _mm_packus_epi16(low, high))
                i &+= 16
            }
            #endif
            while i < inputs {
                row.storeBytes(of: UInt8(truncatingIfNeeded: source.load(fromByteOffset: i &* 2, as: Int16.self) &+ shift), toByteOffset: i, as: UInt8.self)
                i &+= 1
            }
            while i < stride {
                row.storeBytes(of: 0, toByteOffset: i, as: UInt8.self)
                i &+= 1
            }
        }
    }

    /// A direct convolution's rows: output position r, of rows `width` positions wide, reads its
    /// window at a + (r / width) · `lineBytes` + (r % width) · `stepBytes`, its inputs from each of
    /// `taps` (byte offsets from there) in turn.
    public typealias Windows = (taps: UnsafeBufferPointer<Int>, width: Int, lineBytes: Int, stepBytes: Int)

    /// Output positions' windows as a product's rows.
    struct WindowRows: ProductRows {
        let a: UnsafeRawPointer, windows: Windows
        var taps: UnsafeBufferPointer<Int>? { windows.taps }
        @inline(__always) func callAsFunction(_ r: Int) -> UnsafeRawPointer {
            let (line, position) = r.quotientAndRemainder(dividingBy: windows.width)
            return a + (line &* windows.lineBytes &+ position &* windows.stepBytes)
        }
    }

    /// For rows `rows` of `a` (row r at a + r · lda bytes, `quads` quads of bytes each; with
    /// `windows`, r's window, `quads` quads from each tap) and each tile in `tiles`: output[r][c] =
    /// requantized(starts[c] + sum over k of a[r][k] · w[c][k]) for the tile's channels below
    /// `channels`, stored as IntegerGemm.run stores them (levels of the rows past the last six
    /// of `rows` may be stored twice, the same: no other thread may use those rows meanwhile).
    public static func run(a: UnsafePointer<UInt8>, lda: Int, rows: Range<Int>, quads: Int, windows: Windows? = nil,
                           weights: UnsafePointer<Int8>, starts: UnsafePointer<Int32>, tiles: Range<Int>, channels: Int,
                           scale: UnsafePointer<Float>, offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>?, gate: Gate?,
                           output base: UnsafeMutableRawPointer, strides: (row: Int, channel: Int)) {
        let requantization = (scale: scale, offset: offset, bounds: bounds, gate: gate)
        if let windows {
            product(WindowRows(a: UnsafeRawPointer(a), windows: windows), rows: rows, quads: quads, weights: weights, starts: starts, tiles: tiles,
                    channels: channels, requantization, output: base, strides: strides)
        } else {
            product(EvenRows(a: UnsafeRawPointer(a), rowBytes: lda), rows: rows, quads: quads, weights: weights, starts: starts, tiles: tiles,
                    channels: channels, requantization, output: base, strides: strides)
        }
    }

    /// `run` on rows wherever `a` says they lie.
    @inline(__always)
    static func product<Rows: ProductRows>(_ a: Rows, rows: Range<Int>, quads: Int, weights: UnsafePointer<Int8>, starts: UnsafePointer<Int32>,
                                           tiles: Range<Int>, channels: Int,
                                           _ requantization: (scale: UnsafePointer<Float>, offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>?, gate: Gate?),
                                           output base: UnsafeMutableRawPointer, strides: (row: Int, channel: Int)) {
        var tiles = tiles
        let (scale, offset, bounds, gate) = requantization
        // A tile's weights: every tap's quads.
        let tileBytes = quads &* (a.taps?.count ?? 1) &* 64
        #if KIROKU_VNNI
        // Levels, six rows by two tiles at a time (by one for an odd tile left), in 512-bit
        // registers, a last tile of fewer channels through masks; the rows past the last six as
        // the last six rows again (their values stored twice, the same: a row at a time ran four
        // to six times slower); the rest as below.
        if let bounds, strides.channel == 1, rows.count >= 6 {
            let covered = tiles.lowerBound..<max(tiles.lowerBound, min(tiles.upperBound, (channels &+ 15) / 16)), end = rows.upperBound - rows.count % 6
            func coveredTiles<Levels: WideStore>(_ levels: (Int) -> Levels) {
                coveredTiles(rows.lowerBound..<end, levels)
                if end < rows.upperBound { coveredTiles(rows.upperBound - 6..<rows.upperBound, levels) }
            }
            func coveredTiles<Levels: WideStore>(_ rows: Range<Int>, _ levels: (Int) -> Levels) {
                var tile = covered.lowerBound
                while tile &+ 2 <= covered.upperBound {
                    sixRowsByTwoTiles(a, rows: rows, quads: quads, weights: weights + tile &* tileBytes, starts: starts + tile &* 16,
                                      output: base + tile &* 32, rowBytes: strides.row &* 2, (levels(tile), levels(tile &+ 1)))
                    tile &+= 2
                }
                if tile < covered.upperBound {
                    sixRowsWide(a, rows: rows, quads: quads, weights: weights + tile &* tileBytes, starts: starts + tile &* 16,
                                output: base + tile &* 32, rowBytes: strides.row &* 2, levels(tile))
                }
            }
            if let gate {
                coveredTiles { WideLevels(scale: scale + $0 &* 16, offset: offset + $0 &* 16, bounds: bounds, gate: Gated(gate: gate),
                                        channels: channels &- $0 &* 16) }
            } else {
                coveredTiles { WideLevels(scale: scale + $0 &* 16, offset: offset + $0 &* 16, bounds: bounds, gate: Ungated(), channels: channels &- $0 &* 16) }
            }
            tiles = covered.upperBound..<tiles.upperBound
        }
        #endif
        IntegerGemm.tilesByRows(rows: rows, tiles: tiles, channels: channels, Requantization(scale: scale, offset: offset, bounds: bounds, gate: gate),
                                IntegerOutput(base: base, rowStride: strides.row, channelStride: strides.channel),
                                six: { r, tile, body in
                                    sixRows(a, from: r, quads: quads, weights: weights + tile &* tileBytes, starts: starts + tile &* 16, body)
                                },
                                one: { r, tile, body in
                                    oneRow(a(r), quads: quads, taps: a.taps, weights: weights + tile &* tileBytes, starts: starts + tile &* 16, body)
                                })
    }

    #if KIROKU_VNNI
    /// A tile's 16 starting sums, channels 0-7 and 8-15.
    @inline(__always)
    static func startingSums(_ starts: UnsafePointer<Int32>) -> (__m256i, __m256i) {
        let first = UnsafeRawPointer(starts)
        return (_mm256_loadu_si256(first.assumingMemoryBound(to: __m256i.self)),
                _mm256_loadu_si256((first + 32).assumingMemoryBound(to: __m256i.self)))
    }

    /// Rows `rows` (a multiple of 6) by one tile, six at a time, each row's 16 levels stored by
    /// `levels` at `output` + row · `rowBytes`.
    @inline(__always)
    static func sixRowsWide<Levels: WideStore, Rows: ProductRows>(_ a: Rows, rows: Range<Int>, quads: Int, weights: UnsafePointer<Int8>,
                                                                  starts: UnsafePointer<Int32>, output: UnsafeMutableRawPointer, rowBytes: Int,
                                                                  _ levels: Levels) {
        var r = rows.lowerBound
        while r < rows.upperBound {
            sixRowsWide(a, from: r, quads: quads, weights: weights, starts: starts) { row, sums in
                levels.store(sums, at: output + (r &+ row) &* rowBytes)
            }
            r &+= 6
        }
    }

    /// Six rows (`first` to `first` + 5 of `a`, their taps as in `sixRowTile`) by one tile in 512-bit
    /// registers: 6 sums of 16 channels, `body(row, sums)` for each.
    @inline(__always)
    static func sixRowsWide<Rows: ProductRows>(_ a: Rows, from first: Int, quads: Int, weights: UnsafePointer<Int8>, starts: UnsafePointer<Int32>,
                                               _ body: (Int, __m512i) -> Void) {
        var s0 = _mm512_loadu_si512(UnsafeRawPointer(starts))
        var (s1, s2, s3, s4, s5) = (s0, s0, s0, s0, s0)
        let rows = (a(first), a(first &+ 1), a(first &+ 2), a(first &+ 3), a(first &+ 4), a(first &+ 5)), taps = a.taps
        var w = UnsafeRawPointer(weights)
        for tap in 0..<(taps?.count ?? 1) {
            var offset = taps?[tap] ?? 0
            for _ in 0..<quads {
                let w0 = _mm512_loadu_si512(w)
                s0 = kiroku_dpbusd512(s0, _mm512_set1_epi32(rows.0.loadUnaligned(fromByteOffset: offset, as: Int32.self)), w0)
                s1 = kiroku_dpbusd512(s1, _mm512_set1_epi32(rows.1.loadUnaligned(fromByteOffset: offset, as: Int32.self)), w0)
                s2 = kiroku_dpbusd512(s2, _mm512_set1_epi32(rows.2.loadUnaligned(fromByteOffset: offset, as: Int32.self)), w0)
                s3 = kiroku_dpbusd512(s3, _mm512_set1_epi32(rows.3.loadUnaligned(fromByteOffset: offset, as: Int32.self)), w0)
                s4 = kiroku_dpbusd512(s4, _mm512_set1_epi32(rows.4.loadUnaligned(fromByteOffset: offset, as: Int32.self)), w0)
                s5 = kiroku_dpbusd512(s5, _mm512_set1_epi32(rows.5.loadUnaligned(fromByteOffset: offset, as: Int32.self)), w0)
                w += 64
                offset &+= 4
            }
        }
        body(0, s0); body(1, s1); body(2, s2); body(3, s3); body(4, s4); body(5, s5)
    }

    /// Rows `rows` (a multiple of 6) by two tiles, six rows at a time, each row's 32 levels stored by
    /// `levels` (the first tile's, the second's) at `output` + row · `rowBytes`.
    @inline(__always)
    static func sixRowsByTwoTiles<Levels: WideStore, Rows: ProductRows>(_ a: Rows, rows: Range<Int>, quads: Int, weights: UnsafePointer<Int8>,
                                                                        starts: UnsafePointer<Int32>, output: UnsafeMutableRawPointer, rowBytes: Int,
                                                                        _ levels: (Levels, Levels)) {
        var r = rows.lowerBound
        while r < rows.upperBound {
            sixRowsByTwoTiles(a, from: r, quads: quads, weights: weights, starts: starts) { row, tile, sums in
                let target = output + (r &+ row) &* rowBytes
                if tile == 0 { levels.0.store(sums, at: target) } else { levels.1.store(sums, at: target + 32) }
            }
            r &+= 6
        }
    }

    /// Six rows by two tiles (the second's weights a tile's after the first's) in 512-bit
    /// registers: 12 sums of 16 channels, enough to keep the multiply-adds' pipes busy through their
    /// latency (six left them half idle); `body(row, tile, sums)` for each (rows as in `sixRowTile`).
    @inline(__always)
    static func sixRowsByTwoTiles<Rows: ProductRows>(_ a: Rows, from first: Int, quads: Int, weights: UnsafePointer<Int8>, starts: UnsafePointer<Int32>,
                                                     _ body: (Int, Int, __m512i) -> Void) {
        let sums = UnsafeRawPointer(starts)
        sixRowTile(a, from: first, steps: quads, weights: UnsafeRawPointer(weights), next: quads &* (a.taps?.count ?? 1) &* 64,
                   start: (__m512i.loaded(sums), __m512i.loaded(sums + 64)), accumulate: { kiroku_dpbusd512($0, $1, $2) }, body)
    }

    /// How 16 channels' sums in a 512-bit register are stored as levels.
    protocol WideStore {
        /// Stores the levels of 16 channels' `sums` at `target`.
        func store(_ sums: __m512i, at target: UnsafeMutableRawPointer)
    }

    /// The requantization of one tile of 16 channels into levels in 512-bit registers (as
    /// IntegerGemm.TileLevels: `gate`, then clamped in float, rounded by the default mode, packed
    /// with saturation); of a tile's first `channels` (16 or more: all), the others neither read
    /// nor stored.
    struct WideLevels<G: TileGate>: WideStore {
        let scale: __m512, offset: __m512, low: __m512, high: __m512
        let gate: G
        let mask: __mmask16

        @inline(__always)
        init(scale: UnsafePointer<Float>, offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>, gate: G, channels: Int = 16) {
            mask = channels >= 16 ? 0xFFFF : __mmask16(truncatingIfNeeded: 1 &<< channels &- 1)
            (self.scale, self.offset) = (_mm512_maskz_loadu_ps(mask, scale), _mm512_maskz_loadu_ps(mask, offset))
            (low, high) = (_mm512_set1_ps(Float(bounds.lowerBound)), _mm512_set1_ps(Float(bounds.upperBound)))
            self.gate = gate
        }

        /// Stores the levels of 16 channels' `sums` at `target`.
        @inline(__always)
        func store(_ sums: __m512i, at target: UnsafeMutableRawPointer) {
            // Multiplied, then added: rounded twice, as every other build rounds.
            let sum = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sums), scale), offset)
            let value = gate(sum)
            let levels = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(value, low), high)))
            _mm256_mask_storeu_epi16(target, mask, levels)
        }
    }
    #endif

    /// Six rows (`first` to `first` + 5 of `a`) by one tile: 12 sums of 8 channels, `body(row, half, sums)` for each.
    @inline(__always)
    static func sixRows<Rows: ProductRows>(_ a: Rows, from first: Int, quads: Int, weights: UnsafePointer<Int8>, starts: UnsafePointer<Int32>,
                                           _ body: (Int, Int, SIMD8<Int32>) -> Void) {
        #if KIROKU_VNNI
        sixRowTile(a, from: first, steps: quads, weights: UnsafeRawPointer(weights), next: 32, start: startingSums(starts),
                   accumulate: { kiroku_dpbusd256($0, $1, $2) }) { row, half, sums in body(row, half, unsafeBitCast(sums, to: SIMD8<Int32>.self)) }
        #else
        for row in 0..<6 {
            oneRow(a(first &+ row), quads: quads, taps: a.taps, weights: weights, starts: starts) { half, sums in body(row, half, sums) }
        }
        #endif
    }

    /// One row by one tile: two sums of 8 channels, `body(half, sums)` for each.
    @inline(__always)
    static func oneRow(_ a: UnsafeRawPointer, quads: Int, taps: UnsafeBufferPointer<Int>?, weights: UnsafePointer<Int8>,
                       starts: UnsafePointer<Int32>, _ body: (Int, SIMD8<Int32>) -> Void) {
        #if KIROKU_VNNI
        oneRowTile(a, steps: quads, taps: taps, weights: UnsafeRawPointer(weights), start: startingSums(starts),
                   accumulate: kiroku_dpbusd256, body)
        #else
        var sums = UnsafeRawPointer(starts).loadUnaligned(as: SIMD16<Int32>.self)
        var w = weights
        for tap in 0..<(taps?.count ?? 1) {
            let row = (a + (taps?[tap] ?? 0)).assumingMemoryBound(to: UInt8.self)
            for q in 0..<quads {
                for j in 0..<16 {
                    for b in 0..<4 { sums[j] &+= Int32(row[4 &* q &+ b]) &* Int32(w[4 &* j &+ b]) }
                }
                w += 64
            }
        }
        body(0, sums.lowHalf)
        body(1, sums.highHalf)
        #endif
    }
}
