#if KIROKU_AVX2
import _Builtin_intrinsics.intel
#endif
#if KIROKU_VNNI
import CVNNI
#endif

/// A depthwise convolution over int16 centred levels in NHWC: each channel's window times its
/// own 8-bit weights, summed in int32. A window's rows go in pairs down each column, so that one
/// instruction multiplies and adds two rows of 8 channels exactly (AVX2's vpmaddwd and vpaddd, or
/// VNNI's vpdpwssd): the two rows' 16 channels interleaved (vpunpcklwd / vpunpckhwd) against
/// weights packed the same way. With stride and dilation 1 down, two output rows read all but
/// one of their input rows in common: each interleaved pair then serves both, against two sets
/// of weights (the second shifted down a row), so the interleaving is done once for two outputs.
/// Taps outside the input read zero, which is the zero point of centred levels.
public enum IntegerDepthwise {
    /// Row pairs per window column in the packed weights: enough for two output rows (`kernelHeight` + 1
    /// rows, one more for an even height, its last weighing zero in both sets).
    public static func rowPairs(kernelHeight: Int) -> Int { kernelHeight / 2 &+ 1 }

    /// Groups of channels `rows` takes: 16 channels each, the last one those left over.
    public static func groups(channels: Int) -> Int { (channels &+ 15) / 16 }

    /// Packed weights per group of 16 channels.
    public static func groupWeights(kernel: (h: Int, w: Int)) -> Int { 2 &* kernel.w &* rowPairs(kernelHeight: kernel.h) &* 32 }

    /// Where the weight of channel j (of its group of 16) for input row `row` (from the window's
    /// top) of column `column` lies in its group's packed weights: set 0 for an output row, set 1
    /// for the next one (input row r weighing window row r − 1). Layout [set][column][row pair][2][16]:
    /// the first vector of a pair holds channels 0-3 and 8-11, the second 4-7 and 12-15, each
    /// channel as (row 2p, row 2p + 1) side by side, as vpunpck{l,h}wd interleave 128-bit halves.
    public static func packedIndex(channel j: Int, row: Int, column: Int, set: Int, kernel: (h: Int, w: Int)) -> Int {
        ((set &* kernel.w &+ column) &* rowPairs(kernelHeight: kernel.h) &+ row / 2) &* 32 &+ ((j >> 2) & 1) &* 16 &+ (j >> 3) &* 8
            &+ (j & 3) &* 2 &+ row % 2
    }

    /// `weights` ([channel][ky][kx], as ONNX lays them) packed in groups of 16 channels (see `packedIndex`).
    public static func packed(_ weights: [Int16], channels: Int, kernel: (h: Int, w: Int)) -> [Int16] {
        let size = groupWeights(kernel: kernel)
        var packed = [Int16](repeating: 0, count: (channels + 15) / 16 * size)
        for c in 0..<channels {
            for ky in 0..<kernel.h {
                for kx in 0..<kernel.w {
                    let weight = weights[(c * kernel.h + ky) * kernel.w + kx], group = c / 16 * size
                    packed[group + packedIndex(channel: c % 16, row: ky, column: kx, set: 0, kernel: kernel)] = weight
                    packed[group + packedIndex(channel: c % 16, row: ky + 1, column: kx, set: 1, kernel: kernel)] = weight
                }
            }
        }
        return packed
    }

    /// The geometry of one convolution (sizes in positions; the input `channels` wide per position).
    struct Geometry {
        let input: (h: Int, w: Int), output: (h: Int, w: Int), channels: Int
        let kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int), pads: (top: Int, left: Int)

        var rowPairs: Int { IntegerDepthwise.rowPairs(kernelHeight: kernel.h) }

        /// Rows of the ring of padded input rows: as many as a pass reads (two output rows, or one
        /// row's window, dilated).
        var ringRows: Int { (2 &* rowPairs &- 1) &* dilation.h &+ 1 }

        /// Positions in a padded input row: the left pad, the input, and as far right as the last window reads.
        var paddedWidth: Int { max(input.w &+ pads.left, (output.w &- 1) &* stride.w &+ (kernel.w &- 1) &* dilation.w &+ 1) }
    }

    /// Levels of scratch `rows` needs (per thread): a row of zeros and a ring of the input rows the
    /// windows read, zero-padded left and right, 16 levels that a last group of fewer channels may
    /// read past them, and two output rows of 16 channels as floats for that group or for float
    /// outputs (`sizes`, `window`, `pads` as `rows` takes them).
    public static func scratchLevels(sizes: (input: (h: Int, w: Int), output: (h: Int, w: Int)), channels: Int,
                                     window: (kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int)),
                                     pads: (top: Int, left: Int)) -> Int {
        let g = Geometry(input: sizes.input, output: sizes.output, channels: channels, kernel: window.kernel, stride: window.stride,
                         dilation: window.dilation, pads: pads)
        return (g.ringRows &+ 1) &* g.paddedWidth &* channels &+ 16 &+ 4 &* g.output.w &* 16
    }

    /// Output rows `rows` of one image: output[oy][ox][c] = requantized(sum over taps of
    /// input[oy · sh − top + ky · dh][ox · sw − left + kx · dw][c] · w[c][ky][kx]), requantized
    /// and stored as IntegerGemm.run's are (`sizes`: input, output; `window`: kernel, stride,
    /// dilation; `channels` per position; `weights` as `packed` packs them; `gate` as there; `scratch` of
    /// `scratchLevels` levels, this thread's), for the channels of `groups` (of 16, the last one
    /// the channels past the last whole group).
    public static func rows(_ rows: Range<Int>, groups: Range<Int>, input: UnsafePointer<Int16>, sizes: (input: (h: Int, w: Int), output: (h: Int, w: Int)),
                            channels: Int, window: (kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int)),
                            pads: (top: Int, left: Int), weights: UnsafePointer<Int16>, scale: UnsafePointer<Float>,
                            offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>?, gate: Gate?, output base: UnsafeMutableRawPointer,
                            strides: (row: Int, channel: Int), scratch: UnsafeMutablePointer<Int16>) {
        let g = Geometry(input: sizes.input, output: sizes.output, channels: channels, kernel: window.kernel, stride: window.stride,
                         dilation: window.dilation, pads: pads)
        let size = groupWeights(kernel: g.kernel)
        #if KIROKU_AVX2
        let laneGroups = groups.clamped(to: 0..<IntegerDepthwise.groups(channels: g.channels))
        if !laneGroups.isEmpty {
            // Every output through the register-blocked loop, over input rows copied into a ring
            // of zero-padded rows (each row once), rows outside the input read from a row of
            // zeros: no window is checked.
            let rowLevels = g.paddedWidth &* g.channels, inputLevels = g.input.w &* g.channels
            scratch.initialize(repeating: 0, count: (g.ringRows &+ 1) &* rowLevels &+ 16)
            let (zeros, ring) = (UnsafePointer(scratch), scratch + rowLevels), lastGroup = ring + (g.ringRows &* rowLevels &+ 16)
            withUnsafeTemporaryAllocation(of: UnsafePointer<Int16>.self, capacity: 2 &* g.rowPairs) { pointers in
                withUnsafeTemporaryAllocation(of: Int.self, capacity: g.ringRows) { held in
                    held.initialize(repeating: -1)
                    // The channels these groups read: a whole row copied at once, or each position's part of it.
                    let first = laneGroups.lowerBound &* 16, width = min(g.channels, groups.upperBound &* 16) &- first
                    /// Input row y, padded (a row of the ring, copied there if another row holds its place).
                    func padded(_ y: Int) -> UnsafePointer<Int16> {
                        guard y >= 0, y < g.input.h else { return zeros }
                        let slot = y % g.ringRows, row = ring + slot &* rowLevels
                        if held[slot] != y {
                            let (target, source) = (row + g.pads.left &* g.channels, input + y &* inputLevels)
                            if width == g.channels {
                                target.update(from: source, count: inputLevels)
                            } else {
                                for x in 0..<g.input.w {
                                    let at = x &* g.channels &+ first
                                    (target + at).update(from: source + at, count: width)
                                }
                            }
                            held[slot] = y
                        }
                        return UnsafePointer(row)
                    }
                    var oy = rows.lowerBound
                    while oy < rows.upperBound {
                        let iy = oy &* g.stride.h &- g.pads.top
                        // Two output rows at once share their input rows (stride and dilation 1 down).
                        let count = g.stride.h == 1 && g.dilation.h == 1 && oy &+ 1 < rows.upperBound ? 2 : 1
                        for r in 0..<2 &* g.rowPairs {
                            pointers[r] = r < (count == 2 ? 2 &* g.rowPairs : g.kernel.h) ? padded(iy &+ r &* g.dilation.h) : zeros
                        }
                        // Every group along the row (or two): the input rows stay in cache while the
                        // groups run along them, and the weights of every group (a few KB) too.
                        var group = laneGroups.lowerBound
                        while group < laneGroups.upperBound {
                            let channel = group &* 16, run = UnsafePointer(pointers.baseAddress!), remaining = min(16, g.channels &- channel)
                            /// The outputs of the groups `Lanes` holds (this one, or with the next) through
                            /// `stores` (levels or floats, with its gate, if any, as its own type; the
                            /// group's, the next group's).
                            func interior<Lanes: GroupLanes>(_ lanes: Lanes.Type, _ stores: (Lanes.Store, Lanes.Store), output: UnsafeMutableRawPointer,
                                                             outputStep: Int, nextRow: Int) {
                                interiorRun(run, column: channel, count: g.output.w, rows: count, g, lanes: lanes, weights: weights + group &* size,
                                            groupBytes: size &* 2, stores: stores, output: output, outputStep: outputStep, nextRow: nextRow)
                            }
                            /// Levels from `scale` and `offset` (the groups' channels') to `output`, each
                            /// position `outputStep` bytes on: of this group, or `wide`, of the next too.
                            func levels(scale: UnsafePointer<Float>, offset: UnsafePointer<Float>, bounds: ClosedRange<Int32>,
                                        output: UnsafeMutableRawPointer, outputStep: Int, wide: Bool = false) {
                                let nextRow = g.output.w &* outputStep
                                func tile<G: TileGate>(_ gate: G) -> IntegerGemm.TileLevels<G> {
                                    IntegerGemm.TileLevels(scale: scale, offset: offset, bounds: bounds, gate: gate)
                                }
                                #if KIROKU_VNNI
                                func wideLevels<G: TileGate>(_ gate: G) {
                                    interior(TwoGroups<ByteGemm.WideLevels<G>>.self,
                                             (ByteGemm.WideLevels(scale: scale, offset: offset, bounds: bounds, gate: gate),
                                              ByteGemm.WideLevels(scale: scale + 16, offset: offset + 16, bounds: bounds, gate: gate)),
                                             output: output, outputStep: outputStep, nextRow: nextRow)
                                }
                                if wide, let gate {
                                    return wideLevels(Gated(gate: gate))
                                } else if wide {
                                    return wideLevels(Ungated())
                                }
                                #endif
                                if let gate {
                                    let store = tile(Gated(gate: gate))
                                    interior(OneGroup<IntegerGemm.TileLevels<Gated>>.self, (store, store), output: output, outputStep: outputStep, nextRow: nextRow)
                                } else {
                                    let store = tile(Ungated())
                                    interior(OneGroup<IntegerGemm.TileLevels<Ungated>>.self, (store, store), output: output, outputStep: outputStep, nextRow: nextRow)
                                }
                            }
                            if let bounds, remaining == 16 {
                                // Two whole groups side by side in 512-bit registers where the VNNI build runs.
                                #if KIROKU_VNNI
                                let wide = group &+ 1 < laneGroups.upperBound && channel &+ 32 <= g.channels
                                #else
                                let wide = false
                                #endif
                                levels(scale: scale + channel, offset: offset + channel, bounds: bounds,
                                       output: base + (oy &* g.output.w &* strides.row &+ channel) &* 2, outputStep: strides.row &* 2, wide: wide)
                                group &+= wide ? 2 : 1
                                continue
                            }
                            // A last group of fewer than 16 channels (its 16 lanes read into the next
                            // position, or the slack, against zero weights), or float outputs: into
                            // rows of 16 channels in scratch, then the group's channels to the output.
                            withUnsafeTemporaryAllocation(of: Float.self, capacity: 32) { parameters in
                                parameters.initialize(repeating: 0)
                                for j in 0..<remaining { (parameters[j], parameters[16 &+ j]) = (scale[channel &+ j], offset[channel &+ j]) }
                                let (scales, offsets) = (UnsafePointer(parameters.baseAddress!), UnsafePointer(parameters.baseAddress! + 16))
                                if let bounds {
                                    levels(scale: scales, offset: offsets, bounds: bounds, output: UnsafeMutableRawPointer(lastGroup), outputStep: 32)
                                } else if let gate {
                                    let store = IntegerGemm.TileFloats(scale: scales, offset: offsets, gate: Gated(gate: gate))
                                    interior(OneGroup<IntegerGemm.TileFloats<Gated>>.self, (store, store), output: UnsafeMutableRawPointer(lastGroup),
                                             outputStep: 64, nextRow: g.output.w &* 64)
                                } else {
                                    let store = IntegerGemm.TileFloats(scale: scales, offset: offsets, gate: Ungated())
                                    interior(OneGroup<IntegerGemm.TileFloats<Ungated>>.self, (store, store), output: UnsafeMutableRawPointer(lastGroup),
                                             outputStep: 64, nextRow: g.output.w &* 64)
                                }
                            }
                            let firstPosition = oy &* g.output.w
                            if bounds != nil {
                                let levelsOut = base.assumingMemoryBound(to: Int16.self)
                                for position in 0..<count &* g.output.w {
                                    let at: Int = (firstPosition &+ position) &* strides.row &+ channel
                                    (levelsOut + at).update(from: lastGroup + position &* 16, count: remaining)
                                }
                            } else {
                                // Floats NCHW (a row stride of 1): each channel's outputs of these rows lie together.
                                channelPlanes(UnsafeRawPointer(lastGroup), positions: count &* g.output.w, channels: remaining,
                                              into: base.assumingMemoryBound(to: Float.self) + (channel &* strides.channel &+ firstPosition),
                                              plane: strides.channel)
                            }
                            group &+= 1
                        }
                        oy &+= count
                    }
                }
            }
        }
        #else
        // The portable build: each window checked tap by tap, the sums of whole groups 16 channels
        // at a time, the channels past them one at a time.
        let requantization = Requantization(scale: scale, offset: offset, bounds: bounds, gate: gate)
        let output = IntegerOutput(base: base, rowStride: strides.row, channelStride: strides.channel)
        let whole = g.channels / 16
        for oy in rows {
            let y = oy &* g.stride.h &- g.pads.top
            for group in groups.clamped(to: 0..<whole) {
                let channel = group &* 16
                for ox in 0..<g.output.w {
                    let sums = checkedSums(input + channel, g, y: y, x: ox &* g.stride.w &- g.pads.left, weights: weights + group &* size)
                    let position = oy &* g.output.w &+ ox
                    IntegerGemm.store(sums.0, row: position, channel: channel, channels: g.channels, requantization, output)
                    IntegerGemm.store(sums.1, row: position, channel: channel &+ 8, channels: g.channels, requantization, output)
                }
            }
        }
        let w = weights + whole &* size
        for c in groups.contains(whole) ? whole &* 16..<g.channels : 0..<0 {
            for oy in rows {
                for ox in 0..<g.output.w {
                    var sum: Int32 = 0
                    tapsInside(g, y: oy &* g.stride.h &- g.pads.top, x: ox &* g.stride.w &- g.pads.left) { ky, kx, at in
                        sum &+= Int32(input[at &+ c]) &* Int32(w[packedIndex(channel: c & 15, row: ky, column: kx, set: 0, kernel: g.kernel)])
                    }
                    IntegerGemm.store(SIMD8(sum, 0, 0, 0, 0, 0, 0, 0), row: oy &* g.output.w &+ ox, channel: c, channels: c &+ 1,
                                      requantization, output)
                }
            }
        }
        #endif
    }

    #if KIROKU_AVX2
    /// Rows of 16 floats (one a position, `positions` of them, from `rows`; they may lie at an odd
    /// level, so they are read unaligned) as the first `channels` channels' planes at `target`
    /// (channel c's position p at target + c · `plane` + p): blocks of 8 positions by 8 channels
    /// through a transpose, the rest a float at a time.
    @inline(__always)
    static func channelPlanes(_ rows: UnsafeRawPointer, positions: Int, channels: Int, into target: UnsafeMutablePointer<Float>, plane: Int) {
        let blocked = positions / 8 * 8, halves = channels / 8
        withUnsafeTemporaryAllocation(of: SIMD8<Float>.self, capacity: 16) { vectors in
            for p in Swift.stride(from: 0, to: blocked, by: 8) {
                for half in 0..<halves {
                    for k in 0..<8 { vectors[k] = rows.loadUnaligned(fromByteOffset: ((p &+ k) &* 16 &+ 8 &* half) &* 4, as: SIMD8<Float>.self) }
                    let planes = transpose8x8(vectors.baseAddress!)
                    for j in 0..<8 {
                        UnsafeMutableRawPointer(target + ((8 &* half &+ j) &* plane &+ p)).storeBytes(of: planes[j], as: SIMD8<Float>.self)
                    }
                }
            }
        }
        for c in 0..<channels {
            for p in (c < 8 &* halves ? blocked : 0)..<positions {
                target[c &* plane &+ p] = rows.loadUnaligned(fromByteOffset: (p &* 16 &+ c) &* 4, as: Float.self)
            }
        }
    }
    #else
    /// `body(ky, kx, at)` for each tap inside the input of the window whose corner is input row `y`,
    /// column `x`: `at` the level where the tap's position starts.
    @inline(__always)
    static func tapsInside(_ g: Geometry, y: Int, x: Int, _ body: (Int, Int, Int) -> Void) {
        for ky in 0..<g.kernel.h {
            let iy = y &+ ky &* g.dilation.h
            guard iy >= 0, iy < g.input.h else { continue }
            for kx in 0..<g.kernel.w {
                let column = x &+ kx &* g.dilation.w
                guard column >= 0, column < g.input.w else { continue }
                body(ky, kx, (iy &* g.input.w &+ column) &* g.channels)
            }
        }
    }

    /// The sums of 16 channels (8 and 8, in channel order) at the output whose window's corner is
    /// input row `y`, column `x` (either may lie outside the input); `input` at the group's first
    /// channel. Each tap is checked: one outside reads zeros.
    @inline(__always)
    static func checkedSums(_ input: UnsafePointer<Int16>, _ g: Geometry, y: Int, x: Int, weights: UnsafePointer<Int16>)
        -> (SIMD8<Int32>, SIMD8<Int32>) {
        var sums = SIMD16<Int32>(repeating: 0)
        tapsInside(g, y: y, x: x) { ky, kx, at in
            for j in 0..<16 {
                sums[j] &+= Int32(input[at &+ j]) &* Int32(weights[packedIndex(channel: j, row: ky, column: kx, set: 0, kernel: g.kernel)])
            }
        }
        return (sums.lowHalf, sums.highHalf)
    }
    #endif

    #if KIROKU_AVX2
    /// The vectors the register-blocked loops run on: one group of 16 channels in 256 bits, or (the
    /// VNNI build) two groups side by side in 512. Instructions on interleaved pairs work within
    /// 128-bit lanes, so each group keeps the packed weights' layout.
    protocol GroupLanes {
        /// How a group's sums are stored (levels or floats).
        associatedtype Store
        /// All zeros.
        static var zero: Self { get }
        /// The levels of the vector's channels from `p` on.
        static func levels(_ p: UnsafePointer<Int16>) -> Self
        /// A vector of packed weights: the first group's at `p`, the next group's `groupBytes` on.
        static func weights(_ p: UnsafeRawPointer, groupBytes: Int) -> Self
        /// The levels of `a` and `b` interleaved: each 128 bits' lower four pairs, then the upper.
        static func interleaved(_ a: Self, _ b: Self) -> (low: Self, high: Self)
        /// sums + the products of interleaved pairs with pairs of weights.
        static func adding(_ sums: Self, _ pairs: Self, _ weights: Self) -> Self
        /// Stores sums of interleaved pairs (`low` and `high`: see `interleaved`) in channel order
        /// by `stores` (the first group's at `target`, the next group's 32 bytes on).
        static func store(_ low: Self, _ high: Self, by stores: (Store, Store), at target: UnsafeMutableRawPointer)
    }

    /// One group in 256 bits.
    struct OneGroup<Store: TileStore>: GroupLanes {
        let vector: __m256i
        static var zero: Self { OneGroup(vector: _mm256_setzero_si256()) }

        @inline(__always)
        static func levels(_ p: UnsafePointer<Int16>) -> Self { OneGroup(vector: _mm256_loadu_si256(UnsafeRawPointer(p).assumingMemoryBound(to: __m256i.self))) }

        @inline(__always)
        static func weights(_ p: UnsafeRawPointer, groupBytes: Int) -> Self { OneGroup(vector: _mm256_loadu_si256(p.assumingMemoryBound(to: __m256i.self))) }

        @inline(__always)
        static func interleaved(_ a: Self, _ b: Self) -> (low: Self, high: Self) {
            (OneGroup(vector: _mm256_unpacklo_epi16(a.vector, b.vector)), OneGroup(vector: _mm256_unpackhi_epi16(a.vector, b.vector)))
        }

        @inline(__always)
        static func adding(_ sums: Self, _ pairs: Self, _ weights: Self) -> Self {
            #if KIROKU_VNNI
            OneGroup(vector: kiroku_dpwssd256(sums.vector, pairs.vector, weights.vector))
            #else
            OneGroup(vector: _mm256_add_epi32(sums.vector, _mm256_madd_epi16(pairs.vector, weights.vector)))
            #endif
        }

        @inline(__always)
        static func store(_ low: Self, _ high: Self, by stores: (Store, Store), at target: UnsafeMutableRawPointer) {
            let ordered = IntegerDepthwise.inChannelOrder(low.vector, high.vector)
            stores.0.store(ordered.0, ordered.1, at: target)
        }
    }

    #if KIROKU_VNNI
    /// Two groups side by side in 512 bits, stored 16 channels at once.
    struct TwoGroups<Store: ByteGemm.WideStore>: GroupLanes {
        let vector: __m512i
        static var zero: Self { TwoGroups(vector: _mm512_setzero_si512()) }

        @inline(__always)
        static func levels(_ p: UnsafePointer<Int16>) -> Self { TwoGroups(vector: _mm512_loadu_si512(UnsafeRawPointer(p))) }

        @inline(__always)
        static func weights(_ p: UnsafeRawPointer, groupBytes: Int) -> Self {
            let (first, next) = (p.loadUnaligned(as: SIMD8<Int32>.self), p.loadUnaligned(fromByteOffset: groupBytes, as: SIMD8<Int32>.self))
            return TwoGroups(vector: unsafeBitCast(SIMD16(lowHalf: first, highHalf: next), to: __m512i.self))
        }

        @inline(__always)
        static func interleaved(_ a: Self, _ b: Self) -> (low: Self, high: Self) {
            (TwoGroups(vector: _mm512_unpacklo_epi16(a.vector, b.vector)), TwoGroups(vector: _mm512_unpackhi_epi16(a.vector, b.vector)))
        }

        @inline(__always)
        static func adding(_ sums: Self, _ pairs: Self, _ weights: Self) -> Self {
            TwoGroups(vector: kiroku_dpwssd512(sums.vector, pairs.vector, weights.vector))
        }

        @inline(__always)
        static func store(_ low: Self, _ high: Self, by stores: (Store, Store), at target: UnsafeMutableRawPointer) {
            // Each 128 bits of `low` holds channels 0-3 or 8-11 of a group, of `high` 4-7 or 12-15.
            let first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), next = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4)
            stores.0.store(_mm512_permutex2var_epi64(low.vector, first, high.vector), at: target)
            stores.1.store(_mm512_permutex2var_epi64(low.vector, next, high.vector), at: target + 32)
        }
    }
    #endif

    /// `count` outputs along a row (`rows` 2: and the same along the next row, `nextRow` bytes
    /// further), `stride.w` positions apart, the first window's left column `column` levels into
    /// each padded input row of `pointers` (2 · rowPairs rows from the window's top), for the
    /// groups `Lanes` holds (the next group's weights `groupBytes` after this one's): stored by
    /// `stores` (levels or floats; the group's, the next group's 32 bytes on) `outputStep` bytes
    /// apart from `output`. The common windows get loops of their own, unrolled.
    @inline(never)
    static func interiorRun<Lanes: GroupLanes>(_ pointers: UnsafePointer<UnsafePointer<Int16>>, column: Int, count: Int, rows: Int, _ g: Geometry,
                                               lanes: Lanes.Type, weights: UnsafePointer<Int16>, groupBytes: Int, stores: (Lanes.Store, Lanes.Store),
                                               output: UnsafeMutableRawPointer, outputStep: Int, nextRow: Int) {
        let run = Run<Lanes>(pointers: pointers, column: column, count: count, weights: weights, groupBytes: groupBytes, stores: stores,
                             output: output, outputStep: outputStep, nextRow: nextRow)
        switch (g.kernel.h, g.kernel.w, rows) {
        case (3, 3, 1): threeByThree(run, g)
        case (3, 3, _): threeByThreeTwoRows(run, g)
        case (5, 5, 1): fiveByFive(run, g)
        case (5, 5, _): fiveByFiveTwoRows(run, g)
        default: interiorLoop(run, g, height: g.kernel.h, width: g.kernel.w, both: rows == 2)
        }
    }

    // The common windows' loops, each its own function so that the compiler unrolls each for its constants.

    @inline(never)
    static func threeByThree<Lanes>(_ run: Run<Lanes>, _ g: Geometry) { interiorLoop(run, g, height: 3, width: 3, both: false) }

    @inline(never)
    static func threeByThreeTwoRows<Lanes>(_ run: Run<Lanes>, _ g: Geometry) { interiorLoop(run, g, height: 3, width: 3, both: true) }

    @inline(never)
    static func fiveByFive<Lanes>(_ run: Run<Lanes>, _ g: Geometry) { interiorLoop(run, g, height: 5, width: 5, both: false) }

    @inline(never)
    static func fiveByFiveTwoRows<Lanes>(_ run: Run<Lanes>, _ g: Geometry) { interiorLoop(run, g, height: 5, width: 5, both: true) }

    /// What `interiorLoop` reads and writes (see `interiorRun`).
    struct Run<Lanes: GroupLanes> {
        let pointers: UnsafePointer<UnsafePointer<Int16>>, column: Int, count: Int, weights: UnsafePointer<Int16>, groupBytes: Int
        /// The first group's store and the next group's.
        let stores: (Lanes.Store, Lanes.Store)
        let output: UnsafeMutableRawPointer, outputStep: Int, nextRow: Int
    }

    /// `interiorRun`'s loop for a window of `height` x `width` (constants where it is inlined):
    /// blocks of `Block`'s outputs along the row, each pair of weights loaded once per block.
    @inline(__always)
    static func interiorLoop<Lanes>(_ run: Run<Lanes>, _ g: Geometry, height: Int, width: Int, both: Bool) {
        // Four outputs a block (sums of two rows: 16 registers), two where AVX2's 16 registers must also hold the weights.
        #if KIROKU_VNNI
        let outputs = 4
        #else
        let outputs = both ? 2 : 4
        #endif
        guard run.count >= outputs else {
            for done in 0..<run.count { block(run, g, height: height, width: width, both: both, outputs: 1, from: done) }
            return
        }
        // The last block ends with the row, overlapping the one before (its outputs computed again, the same).
        var done = 0
        while done < run.count {
            block(run, g, height: height, width: width, both: both, outputs: outputs, from: min(done, run.count &- outputs))
            done &+= outputs
        }
    }

    /// `outputs` outputs of `interiorLoop` from output `done` on.
    @inline(__always)
    static func block<Lanes>(_ run: Run<Lanes>, _ g: Geometry, height: Int, width: Int, both: Bool, outputs: Int, from done: Int) {
        let rowPairs = IntegerDepthwise.rowPairs(kernelHeight: height), pairs = both ? rowPairs : (height &+ 1) / 2
        let columnStep = g.dilation.w &* g.channels, step = g.stride.w &* g.channels
        let (first, second) = (UnsafeRawPointer(run.weights), UnsafeRawPointer(run.weights + width &* rowPairs &* 32))
        let start = run.column &+ done &* step
        var (sums, next) = (Block<Lanes>(), Block<Lanes>())
        for kx in 0..<width {
            for p in 0..<pairs {
                let offset = (kx &* rowPairs &+ p) &* 64
                let low = Lanes.weights(first + offset, groupBytes: run.groupBytes), high = Lanes.weights(first + (offset &+ 32), groupBytes: run.groupBytes)
                let (nextLow, nextHigh) = both ? (Lanes.weights(second + offset, groupBytes: run.groupBytes),
                                                  Lanes.weights(second + (offset &+ 32), groupBytes: run.groupBytes)) : (low, high)
                let at = start &+ kx &* columnStep
                // A single output row's last pair, of an odd window, reads no row past the window.
                let lower = both || 2 &* p &+ 1 < height ? run.pointers[2 &* p &+ 1] + at : nil
                sums.add(outputs, at: run.pointers[2 &* p] + at, lower: lower, step: step, low: low, high: high,
                         next: both ? (nextLow, nextHigh) : nil, into: &next)
            }
        }
        for o in 0..<outputs {
            let target = run.output + (done &+ o) &* run.outputStep
            let (low, high) = sums.lane(o)
            Lanes.store(low, high, by: run.stores, at: target)
            if both {
                let (nextLow, nextHigh) = next.lane(o)
                Lanes.store(nextLow, nextHigh, by: run.stores, at: target + run.nextRow)
            }
        }
    }

    /// The sums of up to four outputs of one row (channels 0-3, 8-11 and 4-7, 12-15 of each group).
    struct Block<Lanes: GroupLanes> {
        var low0 = Lanes.zero, high0 = Lanes.zero, low1 = Lanes.zero, high1 = Lanes.zero
        var low2 = Lanes.zero, high2 = Lanes.zero, low3 = Lanes.zero, high3 = Lanes.zero

        /// Output `o`'s sums.
        @inline(__always)
        func lane(_ o: Int) -> (Lanes, Lanes) {
            switch o {
            case 0: (low0, high0)
            case 1: (low1, high1)
            case 2: (low2, high2)
            default: (low3, high3)
            }
        }

        /// Adds, for each of the first `outputs` outputs (their pairs' upper rows at `at`, `step`
        /// levels apart; the lower rows at `lower`, or zero), the pair's products with `low` and
        /// `high`, and with `next`'s weights into `other` (the next output row's sums).
        @inline(__always)
        mutating func add(_ outputs: Int, at: UnsafePointer<Int16>, lower: UnsafePointer<Int16>?, step: Int, low: Lanes, high: Lanes,
                          next: (Lanes, Lanes)?, into other: inout Block) {
            @inline(__always)
            func pair(_ o: Int, _ l: inout Lanes, _ h: inout Lanes, _ nl: inout Lanes, _ nh: inout Lanes) {
                let a = Lanes.levels(at + o &* step), b = lower.map { Lanes.levels($0 + o &* step) } ?? Lanes.zero
                let (pl, ph) = Lanes.interleaved(a, b)
                (l, h) = (Lanes.adding(l, pl, low), Lanes.adding(h, ph, high))
                if let next { (nl, nh) = (Lanes.adding(nl, pl, next.0), Lanes.adding(nh, ph, next.1)) }
            }
            pair(0, &low0, &high0, &other.low0, &other.high0)
            if outputs > 1 { pair(1, &low1, &high1, &other.low1, &other.high1) }
            if outputs > 2 {
                pair(2, &low2, &high2, &other.low2, &other.high2)
                pair(3, &low3, &high3, &other.low3, &other.high3)
            }
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
}
