import KirokuKernels
import KirokuKernelsAVX2
import KirokuKernelsVNNI

/// The integer loops of one kernel build: KirokuKernels' IntegerGemm, IntegerDepthwise and
/// LevelLoops, and ByteGemm where the build has VNNI.
struct IntegerLoops: Sendable {
    typealias Strides = (row: Int, channel: Int)
    /// A SiLU or hard-swish before the store, at the output's scale (every build's Gate).
    typealias Gate = KirokuKernels.Gate
    typealias Gemm = @Sendable (UnsafePointer<Int16>, Int, Range<Int>, Int, UnsafePointer<Int16>, Range<Int>, Int,
                                UnsafePointer<Float>, UnsafePointer<Float>, ClosedRange<Int32>?, Gate?, UnsafeMutableRawPointer, Strides) -> Void
    typealias Depthwise = @Sendable (Range<Int>, Range<Int>, UnsafePointer<Int16>, (input: (h: Int, w: Int), output: (h: Int, w: Int)), Int,
                                     (kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int)), (top: Int, left: Int),
                                     UnsafePointer<Int16>, UnsafePointer<Float>, UnsafePointer<Float>, ClosedRange<Int32>?, Gate?,
                                     UnsafeMutableRawPointer, Strides, UnsafeMutablePointer<Int16>) -> Void
    let gemm: Gemm
    let depthwise: Depthwise
    /// LevelLoops.quantize, .dequantize and .add.
    let quantize: @Sendable (UnsafePointer<Float>, Int, Int, Int, Float, UnsafePointer<Float>?, ClosedRange<Int32>, UnsafeMutablePointer<Int16>, Int) -> Void
    let dequantize: @Sendable (UnsafePointer<Int16>, Int, Int, Int, Float, Float, UnsafeMutablePointer<Float>, Int) -> Void
    let add: @Sendable (UnsafePointer<Int16>, UnsafePointer<Int16>, Int, (a: Float, b: Float), ClosedRange<Int32>, UnsafeMutablePointer<Int16>) -> Void
    /// LevelLoops.channelSums.
    let channelSums: @Sendable (UnsafePointer<Int16>, Int, Int, Int, UnsafeMutablePointer<Int32>) -> Void
    /// LevelLoops.scaleChannels.
    let scaleChannels: @Sendable (UnsafePointer<Int16>, Int, Int, Int, (scale: Float, shift: Float, divisor: Float), UnsafePointer<Float>,
                                  ClosedRange<Int32>, UnsafeMutablePointer<Int16>) -> Void
    /// LevelLoops.maxPool.
    let maxPool: @Sendable (Range<Int>, UnsafePointer<Int16>, (input: (h: Int, w: Int), output: (h: Int, w: Int)), Int,
                            (kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int)), (top: Int, left: Int),
                            IntegerMaxPoolKernel.Scaling?, ClosedRange<Int32>, UnsafeMutablePointer<Int16>) -> Void
    /// ByteGemm, in the VNNI build.
    let bytes: Bytes?

    /// ByteGemm's conversion to bytes and its product.
    struct Bytes: Sendable {
        /// ByteGemm.instructions of the build these come from.
        let instructions: String
        let convert: @Sendable (UnsafePointer<Int16>, Int, Int, Int, Int16, UnsafeMutablePointer<UInt8>, Int) -> Void
        let gemm: @Sendable (UnsafePointer<UInt8>, Int, Range<Int>, Int, KirokuKernels.ByteGemm.Windows?, UnsafePointer<Int8>, UnsafePointer<Int32>, Range<Int>, Int,
                             UnsafePointer<Float>, UnsafePointer<Float>, ClosedRange<Int32>?, Gate?, UnsafeMutableRawPointer, Strides) -> Void
    }

    static let portable = IntegerLoops(gemm: KirokuKernels.IntegerGemm.run, depthwise: KirokuKernels.IntegerDepthwise.rows,
                                       quantize: KirokuKernels.LevelLoops.quantize, dequantize: KirokuKernels.LevelLoops.dequantize,
                                       add: KirokuKernels.LevelLoops.add, channelSums: KirokuKernels.LevelLoops.channelSums,
                                       scaleChannels: KirokuKernels.LevelLoops.scaleChannels, maxPool: KirokuKernels.LevelLoops.maxPool, bytes: nil)
    static let avx2 = IntegerLoops(gemm: KirokuKernelsAVX2.IntegerGemm.run, depthwise: KirokuKernelsAVX2.IntegerDepthwise.rows,
                                   quantize: KirokuKernelsAVX2.LevelLoops.quantize, dequantize: KirokuKernelsAVX2.LevelLoops.dequantize,
                                   add: KirokuKernelsAVX2.LevelLoops.add, channelSums: KirokuKernelsAVX2.LevelLoops.channelSums,
                                   scaleChannels: KirokuKernelsAVX2.LevelLoops.scaleChannels, maxPool: KirokuKernelsAVX2.LevelLoops.maxPool, bytes: nil)
    /// The AVX2 loops, with the VNNI build's 8-bit products.
    static let vnni = IntegerLoops(gemm: avx2.gemm, depthwise: KirokuKernelsVNNI.IntegerDepthwise.rows, quantize: avx2.quantize, dequantize: avx2.dequantize,
                                   add: avx2.add, channelSums: avx2.channelSums, scaleChannels: avx2.scaleChannels, maxPool: avx2.maxPool,
                                   bytes: Bytes(instructions: KirokuKernelsVNNI.ByteGemm.instructions, convert: KirokuKernelsVNNI.ByteGemm.bytes,
                                                gemm: KirokuKernelsVNNI.ByteGemm.run))
}

/// A convolution or matrix product on 8-bit levels (IROperator.integerConvolution): int16
/// centred input levels (NHWC) times 8-bit weights, int32 sums, each output channel's sums
/// requantized to centred levels (NHWC) or made floats (NCHW, where no QuantizeLinear follows),
/// through a SiLU or hard-swish first where the layer's `gate` has one.
/// Ungrouped pointwise convolutions and matrix products multiply the input's rows as they lie;
/// other convolutions unroll chunks of output positions' windows (im2col, channels innermost) into
/// the thread's scratch first, a grouped one's products (see `merged(groups:outChannels:)`) each
/// its own rows, and multiply them product by product; depthwise ones run IntegerDepthwise over
/// output rows. With VNNI and weights within int8, the non-depthwise ones multiply bytes with
/// ByteGemm: the unrolled rows are written as bytes, a pointwise layer's rows converted a chunk at
/// a time in the thread's scratch. Where the bytes multiply an ungrouped window over whole quads of
/// channels (or channels that whole quads add at most a third to, as an image's three), the layer
/// runs direct instead: each band of output rows' input rows padded, as bytes, in the thread's
/// scratch, and each position's window read in place, tap by tap.
struct IntegerConvolutionKernel: Kernel {
    enum Method { case rows, unrolled, direct, depthwise }

    /// ByteGemm's packed weights, the sums' starts, quads of inputs per output, the shift that
    /// makes the input's levels bytes, and the build's loops.
    struct BytePlan {
        let weights: UnsafePointer<Int8>, starts: UnsafePointer<Int32>
        let quads: Int, shift: Int16
        let loops: IntegerLoops.Bytes
    }

    let batch: Int, inChannels: Int, outChannels: Int
    /// ONNX's groups: a depthwise layer's channels, 1 for an ungrouped one.
    let groups: Int
    /// Groups that share one product (see `merged(groups:outChannels:)`); 1 where ungrouped or depthwise.
    let merged: Int
    let window: Window2D
    let method: Method
    /// Pairs of int16 inputs per output (a product's window values, its `merged` groups', padded
    /// to even; for a depthwise layer, its window's).
    let pairs: Int
    /// Packed weights: IntegerGemm's tiles (each product's after the product before), or
    /// IntegerDepthwise's groups; nil where `bytes` multiplies.
    let weights: UnsafePointer<Int16>?
    let scale: UnsafePointer<Float>, offset: UnsafePointer<Float>
    /// The centred output levels; nil for a float output.
    let bounds: ClosedRange<Int32>?
    /// A SiLU or hard-swish computed before the output is stored; nil for none.
    let gate: IntegerLoops.Gate?
    /// The 8-bit products, where they run.
    let bytes: BytePlan?
    /// A direct layer's split (`directSplit`) for the session's threads, chosen once at load: the
    /// search grows with the square of the threads (nil: chosen on each run, for its team).
    private(set) var split: (bands: Int, parts: Int)?

    var plane: Int { window.output.h * window.output.w }
    /// The products of a grouped convolution: `merged` groups each, the last possibly fewer.
    var products: Int { (groups + merged - 1) / merged }
    /// Tiles of output channels of one product.
    var tiles: Int { Self.tiled(outChannels / groups * merged) / KirokuKernels.IntegerGemm.tileChannels }
    var multiplyAdds: Int { batch * outChannels * plane * inChannels / groups * window.kernel.h * window.kernel.w }
    var variant: String? {
        let kind = switch method {
        case .rows: "rows"
        case .unrolled: groups == 1 ? "unrolled" : "grouped"
        case .direct: "direct"
        case .depthwise: "depthwise"
        }
        let activation = gate.map { $0.hard ? " + hard-swish" : " + silu" } ?? ""
        return "int8 \(kind) \(window.kernel.h)x\(window.kernel.w)/\(window.stride.h)\(activation)\(bounds == nil ? " to float" : "")\(bytes == nil ? "" : " vnni")"
    }

    /// Positions a thread takes at a time: a multiple of the 6-row tile, about 64 KB of a pointwise
    /// layer's int16 rows or of unrolled rows (every product's).
    var chunkRows: Int { max(6, 64 * 1024 / (method == .unrolled ? products * rowWidth * elementBytes : 4 * pairs) / 6 * 6) }

    /// Scratch floats per thread: the unrolled rows of a chunk, or a pointwise layer's rows as
    /// bytes; a direct layer's band of padded byte rows; a depthwise layer's padded rows.
    var scratchPerThread: Int {
        switch method {
        case .depthwise:
            (KirokuKernels.IntegerDepthwise.scratchLevels(sizes: (window.input, window.output), channels: inChannels,
                                                          window: (window.kernel, window.stride, window.dilation),
                                                          pads: (window.pads.top, window.pads.left)) + 1) / 2
        case .unrolled: (products * productStride(rows: chunkRows) * elementBytes + 3) / 4
        case .direct: (bandInputRows(mostBandRows) * paddedWidth * quadChannels + 3) / 4
        case .rows: bytes.map { chunkRows * $0.quads } ?? 0
        }
    }

    /// A direct layer's padded input row: the columns its windows read, from column −pads.left.
    private var paddedWidth: Int { (window.output.w - 1) * window.stride.w + (window.kernel.w - 1) * window.dilation.w + 1 }

    /// A direct layer's bytes a position: its channels rounded up to a whole quad (the weights
    /// packed for as many, zero for the channels past the input's).
    private var quadChannels: Int { Self.quadChannels(inChannels) }

    /// `channels` rounded up to a whole quad.
    static func quadChannels(_ channels: Int) -> Int { (channels + 3) / 4 * 4 }

    /// `weights` ([outChannels][inChannels][taps]) with zero weights for channels up to a whole quad.
    static func quadPadded(_ weights: [Int64], outChannels: Int, inChannels: Int, taps: Int) -> [Int64] {
        let channels = quadChannels(inChannels)
        var padded = [Int64](repeating: 0, count: outChannels * channels * taps)
        for o in 0..<outChannels {
            for c in 0..<inChannels {
                for t in 0..<taps { padded[(o * channels + c) * taps + t] = weights[(o * inChannels + c) * taps + t] }
            }
        }
        return padded
    }

    /// Output rows a direct layer's band holds at most: about 64 KB of padded input rows (which
    /// every tile's weights then run over).
    private var mostBandRows: Int { max(1, min(window.output.h, 64 * 1024 / (paddedWidth * quadChannels * window.stride.h))) }

    /// How a direct layer splits on `threads` threads: its output rows into `bands` as even as
    /// rows allow (each at most `mostBandRows`), each band's tile pairs into `parts` (each part
    /// pads its band again). Of the splits up to two items a thread past the fewest bands, the
    /// one whose busiest thread (the loop hands each a run of consecutive items) has the least to
    /// do: six-row products by tile pairs, a row left alone costing as a six, and the padding.
    /// Fixed band heights had left 14 rows on 2 threads as 8 and 6 (RepVGG's 14x14 layers), and
    /// 7 rows as 4 and 3 where splitting the tiles evens them.
    static func directSplit(rows: Int, width: Int, mostBandRows: Int, tilePairs: Int, inputRows: (Int) -> Int, rowBytes: Int,
                            tapQuads: Int, threads: Int) -> (bands: Int, parts: Int) {
        let fewest = (rows + mostBandRows - 1) / mostBandRows
        guard threads > 1 else { return (fewest, 1) }
        var best = (bands: fewest, parts: 1), least = Int.max
        for bands in fewest...max(fewest, min(rows, fewest + 2 * threads)) {
            for parts in 1...max(1, min(tilePairs, 2 * threads)) {
                let items = bands * parts
                var busiest = 0
                for thread in 0..<threads {
                    var work = 0
                    for item in (thread * items / threads)..<((thread + 1) * items / threads) {
                        let (band, part) = (item / parts, item % parts)
                        let height = (band + 1) * rows / bands - band * rows / bands, positions = height * width
                        let products = positions >= 6 ? (positions + 5) / 6 : positions
                        let pairs = (part + 1) * tilePairs / parts - part * tilePairs / parts
                        // A six by a tile pair: 12 multiply-adds of a quad each per tap quad, two a cycle;
                        // padding: about 16 bytes a cycle.
                        work += products * pairs * tapQuads * 6 + inputRows(height) * rowBytes / 16
                    }
                    busiest = max(busiest, work)
                }
                if busiest < least { (best, least) = ((bands, parts), busiest) }
            }
        }
        return best
    }

    /// The split of a direct layer on `threads` threads, kept for its runs.
    mutating func planSplit(threads: Int) {
        guard method == .direct else { return }
        split = split(threads: threads)
    }

    private func split(threads: Int) -> (bands: Int, parts: Int) {
        Self.directSplit(rows: window.output.h, width: window.output.w, mostBandRows: mostBandRows, tilePairs: (tiles + 1) / 2,
                         inputRows: bandInputRows, rowBytes: paddedWidth * quadChannels,
                         tapQuads: window.kernel.h * window.kernel.w * quadChannels / 4, threads: threads)
    }

    /// Input rows a band of `rows` output rows reads.
    private func bandInputRows(_ rows: Int) -> Int { (rows - 1) * window.stride.h + (window.kernel.h - 1) * window.dilation.h + 1 }

    func scratchCount(threads: Int) -> Int { threads * scratchPerThread }

    /// Packs `weights` ([outChannels][inputs per output]: centred 8-bit values, window order
    /// [channel][ky][kx] as ONNX lays them; a group's `inChannels` each) for `method`, `merged`
    /// groups to a product, into storage from `store`.
    static func packed(_ weights: [Int64], method: Method, groups: Int, merged: Int, outChannels: Int, inChannels: Int, kernel: (h: Int, w: Int),
                       store: ([Int16]) -> UnsafePointer<Int16>) -> (weights: UnsafePointer<Int16>, pairs: Int) {
        let taps = kernel.h * kernel.w
        if method == .depthwise {
            return (store(KirokuKernels.IntegerDepthwise.packed(weights.map { Int16($0) }, channels: outChannels, kernel: kernel)), (taps + 1) / 2)
        }
        // Unrolled windows run channels innermost ([ky][kx][channel]): an NHWC position's channels lie together.
        let pairs = (merged * inChannels * taps + 1) / 2
        var packed = [Int16](repeating: 0, count: productChannels(groups: groups, merged: merged, outChannels: outChannels) * pairs * 2)
        forEachWeight(weights, groups: groups, merged: merged, outChannels: outChannels, inChannels: inChannels, taps: taps) { o, k, value in
            packed[(o / 16 * pairs + k / 2) * 32 + (o % 16) * 2 + k % 2] = Int16(value)
        }
        return (store(packed), pairs)
    }

    /// ByteGemm's packing of the same `weights` (nil where one lies outside int8) and the starts
    /// of its sums for inputs shifted by `shift`: minus shift times each channel's weight sum.
    static func packedBytes(_ weights: [Int64], groups: Int, merged: Int, outChannels: Int, inChannels: Int, taps: Int, shift: Int16)
        -> (weights: [Int8], starts: [Int32], quads: Int)? {
        guard weights.allSatisfy({ Int64(Int8.min)...Int64(Int8.max) ~= $0 }) else { return nil }
        let quads = (merged * inChannels * taps + 3) / 4, channels = productChannels(groups: groups, merged: merged, outChannels: outChannels)
        var (packed, sums) = ([Int8](repeating: 0, count: channels * quads * 4), [Int64](repeating: 0, count: channels))
        forEachWeight(weights, groups: groups, merged: merged, outChannels: outChannels, inChannels: inChannels, taps: taps) { o, k, value in
            packed[KirokuKernels.ByteGemm.packedIndex(channel: o, input: k, quads: quads)] = Int8(value)
            sums[o] += value
        }
        // Wrapping as the int32 sums do (only a layer of over 130,000 inputs could exceed int32).
        return (packed, sums.map { Int32(truncatingIfNeeded: -Int64(shift) * $0) }, quads)
    }

    /// Groups of a grouped convolution that share one product: as many as a tile's 16 output
    /// channels hold (one where a group has 16 or more). A product unrolls its groups' inputs
    /// together and multiplies them with block-diagonal weights (zero between one group's outputs
    /// and another's inputs): the zeros cost what the idle channels of a tile of one small group
    /// would, and the unrolling, conversion and stores run on whole tiles.
    static func merged(groups: Int, outChannels: Int) -> Int {
        min(groups, max(1, KirokuKernels.IntegerGemm.tileChannels / (outChannels / groups)))
    }

    /// Output channels rounded up to whole tiles.
    private static func tiled(_ channels: Int) -> Int { (channels + 15) / 16 * 16 }

    /// The packed weights' output channels: each product's rounded up to whole tiles.
    private static func productChannels(groups: Int, merged: Int, outChannels: Int) -> Int {
        (groups + merged - 1) / merged * tiled(outChannels / groups * merged)
    }

    /// `body(channel, input, value)` for every weight: its output channel counted in whole tiles
    /// per product (a product's tiles follow the product before, its groups' channels one after
    /// another), its input in unrolled order ([ky][kx][channel] of the product's groups' channels).
    private static func forEachWeight(_ weights: [Int64], groups: Int, merged: Int, outChannels: Int, inChannels: Int, taps: Int,
                                      _ body: (Int, Int, Int64) -> Void) {
        let perGroup = outChannels / groups, span = merged * inChannels, productTiles = tiled(merged * perGroup)
        for o in 0..<outChannels {
            let group = o / perGroup
            let (channel, first) = (group / merged * productTiles + group % merged * perGroup + o % perGroup, group % merged * inChannels)
            for c in 0..<inChannels {
                for t in 0..<taps { body(channel, t * span + first + c, weights[(o * inChannels + c) * taps + t]) }
            }
        }
    }

    func run(_ context: KernelContext) {
        let loops = context.integerKernels.integer
        let input = UnsafeRawPointer(context.inputs[0]).assumingMemoryBound(to: Int16.self)
        let output = UnsafeMutableRawPointer(context.outputs[0])
        let inputPlane = window.input.h * window.input.w
        // A matrix product's rows are the batch's images: one product streams the weights once.
        // Its rows as they lie: shared by chunks of rows and ranges of tiles.
        func product(_ x: UnsafePointer<Int16>, rows: Int, into y: UnsafeMutableRawPointer, strides: IntegerLoops.Strides) {
            let work = RowWork(rows: rows, tiles: tiles, chunkRows: chunkRows, threads: context.threads, step: strides.channel == 1 ? 6 : 48)
            context.team.parallelFor(work.count) { index, worker in
                let (rows, tiles) = work.item(index)
                if let weights {
                    loops.gemm(x, inChannels, rows, pairs, weights, tiles, outChannels, scale, offset, bounds, gate, y, strides)
                } else if let bytes, !tiles.isEmpty {
                    let converted = UnsafeMutableRawPointer(context.scratch + worker * scratchPerThread).assumingMemoryBound(to: UInt8.self)
                    bytes.loops.convert(x + rows.lowerBound * inChannels, inChannels, rows.count, inChannels, bytes.shift, converted, 4 * bytes.quads)
                    multiplyBytes(converted, rows: rows, tiles: tiles, product: 0, channels: outChannels, into: y, strides: strides)
                }
            }
        }
        if method == .rows, plane == 1, inputPlane == 1 { return product(input, rows: batch, into: output, strides: (outChannels, 1)) }
        for n in 0..<batch {
            let x = input + n * inChannels * inputPlane
            // Levels: positions by channels; floats: NCHW.
            let (y, strides) = bounds == nil ? (output + n * outChannels * plane * 4, (row: 1, channel: plane))
                                             : (output + n * outChannels * plane * 2, (row: outChannels, channel: 1))
            switch method {
            case .rows:
                product(x, rows: plane, into: y, strides: strides)
            case .unrolled:
                // Each chunk of positions unrolled once for every product, each product's rows apart
                // (bytes for ByteGemm, else int16 levels), then multiplied product by product.
                let work = RowWork(rows: plane, tiles: 1, chunkRows: chunkRows, threads: context.threads)
                let vectors = batch * inChannels * inputPlane >= 16, groupOutputs = outChannels / groups
                let stride = productStride(rows: work.chunkRows)
                context.team.parallelFor(work.count) { chunk, worker in
                    let rows = work.item(chunk).rows
                    let scratch = UnsafeMutableRawPointer(context.scratch + worker * scratchPerThread)
                    let (levels, bytesIn) = (scratch.assumingMemoryBound(to: Int16.self), scratch.assumingMemoryBound(to: UInt8.self))
                    if let bytes {
                        unroll(x, rows: rows, into: bytesIn, stride: stride, shift: bytes.shift, vectors: vectors)
                    } else {
                        unroll(x, rows: rows, into: levels, stride: stride, shift: 0, vectors: vectors)
                    }
                    for product in 0..<products {
                        // The product's groups: `merged`, the last product's possibly fewer.
                        let channels = min(merged, groups - product * merged) * groupOutputs, used = 0..<(channels + 15) / 16
                        guard let weights else {
                            multiplyBytes(bytesIn + product * stride, rows: rows, tiles: used, product: product, channels: channels, into: y,
                                          strides: strides)
                            continue
                        }
                        let first = product * merged * groupOutputs
                        loops.gemm(levels + product * stride, 2 * pairs, 0..<rows.count, pairs, weights + product * tiles * pairs * 32, used,
                                   channels, scale + first, offset + first, bounds, gate,
                                   y + (rows.lowerBound * strides.row + first * strides.channel) * (bounds == nil ? 4 : 2), strides)
                    }
                }
            case .direct:
                direct(x, into: y, strides: strides, context)
            case .depthwise:
                // On more than one thread, two bands a thread of at least 4 rows (output rows go two
                // at a time, and each band copies its window's input rows), and where a plane has
                // too few rows for that, the channels' groups split as well, at even groups (the
                // VNNI build runs groups in pairs).
                let outHeight = window.output.h, lanes = KirokuKernels.IntegerDepthwise.groups(channels: inChannels)
                let bands = context.threads == 1 ? 1 : max(1, min(2 * context.threads, outHeight / 4))
                let parts = context.threads == 1 ? 1 : min((lanes + 1) / 2, max(1, (2 * context.threads + bands - 1) / bands))
                let cut = { (part: Int) in part == parts ? lanes : (part * lanes / parts + 1) & ~1 }
                context.team.parallelFor(bands * parts) { item, worker in
                    let (band, part) = (item / parts, item % parts)
                    let rows = band * outHeight / bands..<(band + 1) * outHeight / bands
                    let scratch = UnsafeMutableRawPointer(context.scratch + worker * scratchPerThread).assumingMemoryBound(to: Int16.self)
                    loops.depthwise(rows, cut(part)..<cut(part + 1), x, (window.input, window.output), inChannels,
                                    (window.kernel, window.stride, window.dilation), (window.pads.top, window.pads.left), weights!, scale,
                                    offset, bounds, gate, y, strides, scratch)
                }
            }
        }
    }

    /// A direct layer on one image: bands of output rows, each band's input rows padded as bytes
    /// once, then one product over the band's positions whose rows are their windows (read from
    /// each tap in turn); on more than one thread, the tiles split too where that evens the
    /// threads' work (`directSplit`).
    private func direct(_ x: UnsafePointer<Int16>, into y: UnsafeMutableRawPointer, strides: IntegerLoops.Strides, _ context: KernelContext) {
        guard let bytes else { return }
        let (columns, channels) = (paddedWidth, quadChannels)
        let tilePairs = (tiles + 1) / 2
        let (bands, parts) = split ?? split(threads: context.threads)
        let rowBytes = (bounds == nil ? 4 : 2) * window.output.w * strides.row
        withUnsafeTemporaryAllocation(of: Int.self, capacity: window.kernel.h * window.kernel.w) { taps in
            for ky in 0..<window.kernel.h {
                for kx in 0..<window.kernel.w { taps[ky * window.kernel.w + kx] = (ky * window.dilation.h * columns + kx * window.dilation.w) * channels }
            }
            let taps = UnsafeBufferPointer(taps)
            context.team.parallelFor(bands * parts) { item, worker in
                let (band, part) = (item / parts, item % parts)
                let rows = band * window.output.h / bands..<(band + 1) * window.output.h / bands
                let padded = UnsafeMutableRawPointer(context.scratch + worker * scratchPerThread).assumingMemoryBound(to: UInt8.self)
                let top = rows.lowerBound * window.stride.h - window.pads.top
                pad(x, rows: top..<top + bandInputRows(rows.count), into: padded, bytes: bytes)
                let (first, last) = (2 * (part * tilePairs / parts), min(tiles, 2 * ((part + 1) * tilePairs / parts)))
                let windows = (taps: taps, width: window.output.w, lineBytes: window.stride.h * columns * channels, stepBytes: window.stride.w * channels)
                bytes.loops.gemm(padded, 0, 0..<rows.count * window.output.w, channels / 4, windows, bytes.weights, bytes.starts, first..<last,
                                 outChannels, scale, offset, bounds, gate, y + rows.lowerBound * rowBytes, strides)
            }
        }
    }

    /// Input rows `rows` of one image (level zero outside it) as bytes (level + shift) at `target`,
    /// `paddedWidth` positions a row from column −pads.left, level zero outside the input; a
    /// position's `quadChannels` bytes (inside the input, byte zero past its channels: their
    /// weights are zero).
    private func pad(_ x: UnsafePointer<Int16>, rows: Range<Int>, into target: UnsafeMutablePointer<UInt8>, bytes: BytePlan) {
        let (channels, columns) = (quadChannels, paddedWidth)
        let left = min(window.pads.left, columns), inside = max(0, min(window.input.w, columns - window.pads.left))
        let zero = UInt8(truncatingIfNeeded: bytes.shift)
        for (index, iy) in rows.enumerated() {
            let row = target + index * columns * channels
            guard iy >= 0, iy < window.input.h, inside > 0 else {
                row.initialize(repeating: zero, count: columns * channels)
                continue
            }
            row.initialize(repeating: zero, count: left * channels)
            let source = x + iy * window.input.w * inChannels
            if channels == inChannels {
                bytes.loops.convert(source, inside * channels, 1, inside * channels, bytes.shift, row + left * channels, inside * channels)
            } else {
                bytes.loops.convert(source, inChannels, inside, inChannels, bytes.shift, row + left * channels, channels)
            }
            (row + (left + inside) * channels).initialize(repeating: zero, count: (columns - left - inside) * channels)
        }
    }

    /// ByteGemm over rows `rows` of the output, their bytes from `a` (row r − rows.lowerBound at a
    /// + that · 4 · quads); of product `product`, its tiles `tiles` and first `channels` output channels.
    private func multiplyBytes(_ a: UnsafePointer<UInt8>, rows: Range<Int>, tiles: Range<Int>, product: Int, channels: Int,
                               into y: UnsafeMutableRawPointer, strides: IntegerLoops.Strides) {
        guard let bytes, !tiles.isEmpty else { return }
        let (first, before) = (product * merged * outChannels / groups, product * self.tiles)
        bytes.loops.gemm(a, 4 * bytes.quads, 0..<rows.count, bytes.quads, nil, bytes.weights + before * bytes.quads * 64, bytes.starts + before * 16,
                         tiles, channels, scale + first, offset + first, bounds, gate,
                         y + (rows.lowerBound * strides.row + first * strides.channel) * (bounds == nil ? 4 : 2), strides)
    }

    /// Elements of one position's unrolled row: bytes (quads of them) where ByteGemm multiplies, else int16 pairs.
    private var rowWidth: Int { bytes.map { 4 * $0.quads } ?? 2 * pairs }

    /// Bytes of an unrolled element: a byte where ByteGemm multiplies, else an int16 level.
    private var elementBytes: Int { bytes == nil ? 2 : 1 }

    /// Elements from one product's unrolled rows to the next's, for chunks of up to `rows` rows: the
    /// rows and 16 elements of slack, which the last row's copies may run into.
    private func productStride(rows: Int) -> Int { rows * rowWidth + 16 }

    /// Each position of `rows` as one row of `rowWidth` elements for each product (product p's
    /// from unrolled + p · `stride`, see `productStride`): its window, [ky][kx][channel] over the product's groups'
    /// channels, as `Element`s (levels, or bytes shifted by `shift`), level zero outside the input,
    /// for a last product's missing groups and in the row's spare end. A window row inside the
    /// input is one run of it where the convolution is ungrouped (else a run per tap and product),
    /// copied 16 levels at a time; each copy may run up to 15 elements past its end, into what is
    /// written next (or a product's slack, see `productStride`), and read as far past its source:
    /// within the input's buffer, sized in floats, when it holds at least 16 levels (`vectors`;
    /// smaller inputs are copied level by level).
    private func unroll<Element: UnrolledElement>(_ x: UnsafePointer<Int16>, rows: Range<Int>, into unrolled: UnsafeMutablePointer<Element>,
                                                  stride: Int, shift: Int16, vectors: Bool) {
        // A product's run of `span` channels a tap; all of them (one product) where ungrouped.
        let (kh, kw) = window.kernel, width = rowWidth, span = inChannels / groups * merged, segment = kw * span
        let last = inChannels - (products - 1) * span
        let fill = { (target: UnsafeMutablePointer<Element>, count: Int, source: UnsafePointer<Int16>?) in
            Element.fill(target, count: count, from: source, shift: shift, vectors: vectors)
        }
        var (oy, ox) = (rows.lowerBound / window.output.w, rows.lowerBound % window.output.w)
        for index in 0..<rows.count {
            let row = unrolled + index * width
            let left = ox * window.stride.w - window.pads.left
            let inside = products == 1 && window.dilation.w == 1 && left >= 0 && left + kw <= window.input.w
            for ky in 0..<kh {
                let iy = oy * window.stride.h - window.pads.top + ky * window.dilation.h, target = row + ky * segment
                guard iy >= 0, iy < window.input.h else {
                    for product in 0..<products { fill(target + product * stride, segment, nil) }
                    continue
                }
                let line = x + iy * window.input.w * inChannels
                guard !inside else {
                    fill(target, segment, line + left * inChannels)
                    continue
                }
                for kx in 0..<kw {
                    let ix = left + kx * window.dilation.w, source = ix >= 0 && ix < window.input.w ? line + ix * inChannels : nil
                    for product in 0..<products - 1 { fill(target + product * stride + kx * span, span, source.map { $0 + product * span }) }
                    let end = target + (products - 1) * stride + kx * span
                    fill(end, last, source.map { $0 + (products - 1) * span })
                    if last < span { fill(end + last, span - last, nil) }
                }
            }
            for product in 0..<products where width > kh * segment { fill(row + product * stride + kh * segment, width - kh * segment, nil) }
            ox += 1
            if ox == window.output.w { (ox, oy) = (0, oy + 1) }
        }
    }
}

/// An element of unrolled rows: an int16 level, or a byte (the level plus a shift) for ByteGemm.
protocol UnrolledElement {
    /// Writes `count` levels from `source` (level zero when nil) at `target`, shifted by `shift`
    /// where the element is a byte; 16 at a time with `vectors`, up to 15 past `count`.
    static func fill(_ target: UnsafeMutablePointer<Self>, count: Int, from source: UnsafePointer<Int16>?, shift: Int16, vectors: Bool)
}

extension Int16: UnrolledElement {
    @inline(__always)
    static func fill(_ target: UnsafeMutablePointer<Int16>, count: Int, from source: UnsafePointer<Int16>?, shift: Int16, vectors: Bool) {
        guard vectors else {
            for i in 0..<count { target[i] = source?[i] ?? 0 }
            return
        }
        var i = 0
        while i < count {
            let values = source.map { UnsafeRawPointer($0 + i).loadUnaligned(as: SIMD16<Int16>.self) } ?? SIMD16()
            UnsafeMutableRawPointer(target + i).storeBytes(of: values, as: SIMD16<Int16>.self)
            i += 16
        }
    }
}

extension UInt8: UnrolledElement {
    @inline(__always)
    static func fill(_ target: UnsafeMutablePointer<UInt8>, count: Int, from source: UnsafePointer<Int16>?, shift: Int16, vectors: Bool) {
        // Shifted levels lie in 0...255 (ByteGemm's plan holds the input's levels to that).
        guard vectors else {
            for i in 0..<count { target[i] = UInt8(truncatingIfNeeded: (source?[i] ?? 0) &+ shift) }
            return
        }
        var i = 0
        let shifts = SIMD16<Int16>(repeating: shift)
        while i < count {
            let values = source.map { UnsafeRawPointer($0 + i).loadUnaligned(as: SIMD16<Int16>.self) } ?? SIMD16()
            UnsafeMutableRawPointer(target + i).storeBytes(of: SIMD16<UInt8>(truncatingIfNeeded: values &+ shifts), as: SIMD16<UInt8>.self)
            i += 16
        }
    }
}

/// How a product over rows is shared out: chunks of rows whose input (about 64 KB) stays in cache
/// while every tile of output channels runs over it, smaller chunks where the rows are too few for
/// four a thread, and, where even the smallest chunks are too few, ranges of tiles too (each such
/// range converts its rows to bytes again). Chunks are multiples of `step` rows where `chunkRows`
/// allows: 6 (a tile's), or 48 for float planes (NCHW), where chunks of 6 rows would have two
/// threads writing one cache line of a channel's plane at every chunk's end (48 rows: one line
/// in eight chunks' ends, or none where the plane is a multiple of 16).
struct RowWork {
    let rows: Int, tiles: Int, chunkRows: Int, chunks: Int, tileParts: Int

    init(rows: Int, tiles: Int, chunkRows: Int, threads: Int, step: Int = 6) {
        let wanted = 4 * threads
        (self.rows, self.tiles) = (rows, tiles)
        let most = chunkRows >= step ? chunkRows / step * step : chunkRows
        self.chunkRows = threads == 1 ? chunkRows : min(most, max(step, ((rows + wanted - 1) / wanted + step - 1) / step * step))
        chunks = (rows + self.chunkRows - 1) / self.chunkRows
        tileParts = threads == 1 ? 1 : max(1, min(tiles, (wanted + chunks - 1) / chunks))
    }

    var count: Int { chunks * tileParts }

    /// The rows and tiles of item `index` (possibly no tiles).
    func item(_ index: Int) -> (rows: Range<Int>, tiles: Range<Int>) {
        let (chunk, part) = (index / tileParts, index % tileParts)
        return (chunk * chunkRows..<min(rows, (chunk + 1) * chunkRows), part * tiles / tileParts..<(part + 1) * tiles / tileParts)
    }
}
