/// How a convolution runs through KirokuKernels' DirectConvolution (the AVX2 build): weights
/// packed at load in blocks of 6 output channels, the input read where it lies (pointwise) or
/// from a zero-padded copy, and the output cut into strips of 16 positions, grouped in bands whose
/// input stays in cache while every block of channels is computed over them; deep inputs go in
/// passes of input channels (see DirectConvolution.block), each strip's share copied into a small
/// panel per thread (or, for a kernel of several taps and few blocks of output channels, read in place).
///
/// Strips run along the flattened padded plane at stride 1: output (oh, ow) reads padded
/// (oh + ki, ow + kj), a fixed offset per tap, so a strip may cross rows. Where the padded row is
/// wider than the output's, the results land in a grid of padded rows (scratch) and are copied out
/// without the extra columns. Strided convolutions run strips along each output row instead. Where
/// a run of positions is not a multiple of 16, its last strip (a tail) ends at its end, overlapping
/// the one before. Shapes where this computes many positions for nothing (rows much narrower than
/// their padding, or than a strip) stay with im2col and sgemm.
struct DirectConvolutionPlan: DirectMethod {
    let block: KernelLoops.DirectBlock
    let inChannels: Int, outChannels: Int
    let window: Window2D
    /// The padded copy's layout; nil where the input is read as it is (pointwise convolutions, and
    /// unpadded stride-1 ones: their last strip ends at the last output, so no tap reads past the
    /// input).
    let padded: PaddedPlaneLayout?
    /// Floats between input channels where the strips read them.
    let channelStride: Int
    let tapOffsets: [Int]
    /// Where a pass's input rows lie (channel c, tap t at c * channelStride + tapOffsets[t]) when
    /// strips read them in place; empty when each strip's are packed into a panel first.
    let inPlaceRows: [Int]
    let strips: [(source: Int, target: Int)]
    /// The runs' last strips where they overlap the one before (see `bands`).
    let tails: [(source: Int, target: Int)]
    /// Input channels per pass and output channels per group (see DirectConvolution.block).
    let depthChunk: Int, rowChunk: Int
    /// Consecutive strips, each band's input about `bandBytes` (as many bands as a multiple of the
    /// threads), and the tails that go with them.
    let bands: [(strips: Range<Int>, tails: Range<Int>)]
    /// Row length of the grid results land in before the copy out; nil: straight into the output.
    let gridPitch: Int?
    /// Weights [block][input channel][tap][6], zero for the channels past the last; bias per
    /// channel, zero-padded to whole blocks.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    /// Output channels one block computes (the loops' DirectConvolution.blockChannels).
    let blockChannels: Int
    var blocks: Int { (outChannels + blockChannels - 1) / blockChannels }
    var outputPlane: Int { window.output.h * window.output.w }

    /// A plan for a session on `threads` threads, or nil when `loops` has no direct convolution or
    /// the shape is not worth it; `store` keeps the packed weights for the session's life. With
    /// `beforePanels` the alternative is PanelConvolutionPlan, which computes whole panels of 16
    /// positions too and copies its input first: a pointwise convolution is then worth it whatever its tail.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, threads: Int, beforePanels: Bool = false, store: (Tensor) -> UnsafePointer<Float>) {
        let taps = window.kernel.h * window.kernel.w
        let pointwise = window.kernel == (1, 1) && window.stride == (1, 1) && window.pads == (0, 0, 0, 0)
        guard let block = loops.directConvolution, groups == 1 else { return nil }
        let (outHeight, outWidth) = window.output, strip = Self.stripLength
        let layout = pointwise ? nil : window.stride.w == 1 ? PaddedPlaneLayout(sharingColumnPadding: window) : PaddedPlaneLayout(window, slack: 0)
        let pitch = layout?.rowLength ?? outWidth
        let copies = layout != nil && (window.pads != (0, 0, 0, 0) || window.stride != (1, 1))
        // Runs of positions a strip may cross (the plane at stride 1, else each output row): where
        // a run's length is not a multiple of 16, a tail strip ends at its end, overlapping the
        // strip before it.
        var runs: [(source: Int, target: Int, count: Int)] = []
        let positionsPerStrip: Int  // input positions one strip's output reads, for band sizing
        if window.stride == (1, 1) {
            // Flat strips over outHeight rows of `pitch` (the padding columns computed and dropped),
            // up to the last output.
            let total = (outHeight - 1) * pitch + outWidth
            guard total >= strip else { return nil }
            runs = [(0, 0, total)]
            positionsPerStrip = strip
        } else {
            guard outWidth >= strip, let layout else { return nil }
            runs = (0..<outHeight).map { oh in (oh * window.stride.h * layout.rowLength, oh * outWidth, outWidth) }
            positionsPerStrip = strip * window.stride.h * window.stride.w
        }
        // Worth it while the positions computed (padding columns, overlapping tails) stay within
        // what sgemm's own overheads cost: its packing per call for pointwise layers, the unrolled
        // copy for the rest (measured on InceptionV3 and EfficientNet-Lite0).
        let computed = runs.reduce(0) { $0 + Self.computed($1.count) }
        guard pointwise && beforePanels || computed * 100 <= outHeight * outWidth * (pointwise ? Self.pointwiseAllowance : Self.unrolledAllowance) else {
            return nil
        }
        self.block = block
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.window = window
        padded = copies ? layout : nil
        channelStride = copies ? layout?.floats ?? 0 : window.input.h * window.input.w
        tapOffsets = layout?.tapOffsets ?? [0]
        gridPitch = window.stride == (1, 1) && pitch != outWidth ? pitch : nil
        let passes = (inChannels * taps + Self.passDepth - 1) / Self.passDepth
        depthChunk = (inChannels + passes - 1) / passes
        let (stride, offsets) = (channelStride, tapOffsets)
        blockChannels = loops.directBlockChannels
        inPlaceRows = taps == 1 || outChannels > Self.mostChannelsInPlace ? []
            : (0..<depthChunk).flatMap { c in offsets.map { c * stride + $0 } }
        let width = blockChannels
        rowChunk = max(width, Self.groupBytes / (depthChunk * taps * 4) / width * width)
        let perBand = max(1, Self.bandBytes / max(inChannels * positionsPerStrip * 4, 1))
        (strips, tails, bands) = Self.cut(runs, perBand: perBand, threads: threads)

        let rows = (outChannels + width - 1) / width * width
        var packed = Tensor(zeros: [rows * inChannels * taps])
        var paddedBias = Tensor(zeros: [rows])
        for o in 0..<outChannels {
            paddedBias.data[o] = bias?.data[o] ?? 0
            for c in 0..<inChannels {
                for t in 0..<taps {
                    packed.data[((o / width * inChannels + c) * taps + t) * width + o % width] = weights.data[(o * inChannels + c) * taps + t]
                }
            }
        }
        self.weights = store(packed)
        self.bias = store(paddedBias)
    }

    /// The strips of 16 covering `runs`, the runs' tails (a last strip ending at a run's end where
    /// its length is not a multiple of 16, overlapping the strip before), and bands of about
    /// `perBand` consecutive strips, as many as a multiple of `threads` (bands are the work items: 5
    /// on 2 threads left one idle a fifth of the time), each with the tails of the runs whose last
    /// strip it holds (run after it: a tail recomputes what it overlaps from the start, and no two
    /// threads write the same place).
    static func cut(_ runs: [(source: Int, target: Int, count: Int)], perBand: Int, threads: Int)
        -> (strips: [(source: Int, target: Int)], tails: [(source: Int, target: Int)], bands: [(strips: Range<Int>, tails: Range<Int>)]) {
        let strip = stripLength
        var strips: [(source: Int, target: Int)] = [], tails: [(source: Int, target: Int)] = []
        var tailsAfter: [Int] = []  // tails once strips[i] is done, for each i
        for run in runs {
            for start in stride(from: 0, through: run.count - strip, by: strip) {
                strips.append((run.source + start, run.target + start))
                tailsAfter.append(tails.count)
            }
            if run.count % strip != 0 {
                tails.append((run.source + run.count - strip, run.target + run.count - strip))
                tailsAfter[tailsAfter.count - 1] = tails.count  // with the run's last strip
            }
        }
        let count = min(strips.count, ((strips.count + perBand - 1) / perBand + threads - 1) / threads * threads)
        let ends = (1...count).map { strips.count * $0 / count }
        let bands = zip([0] + ends, ends).map { start, end in
            (start..<end, (start == 0 ? 0 : tailsAfter[start - 1])..<tailsAfter[end - 1])
        }
        return (strips, tails, bands)
    }

    /// Positions the strips compute to cover `count` (the last strip overlaps the one before).
    private static func computed(_ count: Int) -> Int { (count + stripLength - 1) / stripLength * stripLength }

    /// Scratch floats on `threads` threads: the padded input, the grid, a panel per thread.
    func scratchCount(threads: Int) -> Int { panelsStart + threads * panelFloats }

    /// Where the per-thread panels start in scratch, after the padded input and the grid, on a
    /// cache line (scratch starts on one).
    private var panelsStart: Int { (paddedFloats + (gridPitch.map { outChannels * window.output.h * $0 } ?? 0) + 15) / 16 * 16 }
    /// One strip's input for one pass (see DirectConvolution.block).
    private var panelFloats: Int { inPlaceRows.isEmpty ? depthChunk * window.kernel.h * window.kernel.w * Self.stripLength : 0 }

    /// The padded input's floats (no strip reads past it: each run's last strip ends at its end).
    private var paddedFloats: Int { padded.map { inChannels * $0.floats } ?? 0 }

    var label: String { "direct" }
    /// Not when results go to a grid first.
    var addsResidual: Bool { gridPitch == nil }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        var source = x
        if let padded {
            padded.fill(channels: inChannels, of: x, into: context.scratch, context: context)
            source = UnsafePointer(context.scratch)
        }
        let grid = gridPitch.map { _ in context.scratch + paddedFloats }
        let target = grid ?? y, targetPlane = gridPitch.map { window.output.h * $0 } ?? outputPlane
        let bounds = activation?.bounds ?? -.infinity ... .infinity
        let threads = context.threads
        // Work items: each band, cut into chunks of output channels where the bands alone are too
        // few to share out evenly (bands differ by a strip and the tails they carry).
        let chunks = threads == 1 ? 1 : max(1, min(blocks, (Self.itemsPerThread * threads + bands.count - 1) / bands.count))
        tapOffsets.withUnsafeBufferPointer { offsets in
            inPlaceRows.withUnsafeBufferPointer { inPlaceRows in
                strips.withUnsafeBufferPointer { strips in
                    tails.withUnsafeBufferPointer { tails in
                        context.team.parallelFor(bands.count * chunks) { index, worker in
                            let band = bands[index / chunks], chunk = index % chunks
                            // As even as the blocks allow: every chunk has one.
                            let first = chunk * blocks / chunks * blockChannels
                            let count = min(outChannels, (chunk + 1) * blocks / chunks * blockChannels) - first
                            // The band's strips, then (all passes of) its tails.
                            for part in [UnsafeBufferPointer(rebasing: strips[band.strips]), UnsafeBufferPointer(rebasing: tails[band.tails])]
                            where !part.isEmpty {
                                block(source, channelStride, inChannels, offsets, inPlaceRows, weights + first * inChannels * offsets.count, bias + first,
                                      count, bounds, added.map { $0 + first * targetPlane }, part, target + first * targetPlane, targetPlane,
                                      depthChunk, rowChunk, context.scratch + panelsStart + worker * panelFloats)
                            }
                        }
                    }
                }
            }
        }
        if let grid, let pitch = gridPitch {
            let (outHeight, outWidth) = window.output
            context.team.parallelFor(outChannels) { c in
                let out = y + c * outputPlane
                for oh in 0..<outHeight { (out + oh * outWidth).update(from: grid + c * targetPlane + oh * pitch, count: outWidth) }
            }
        }
        applyAfter(activation, to: y, channels: outChannels, plane: outputPlane, context: context)
    }

    /// Output positions one strip computes (KirokuKernels' DirectConvolution.stripLength).
    static let stripLength = 16

    /// Positions computed per 100 needed that a direct convolution may spend and still beat sgemm:
    /// pointwise (sgemm packs its operands on every call: 4% more; InceptionV3's 17x17 layers, at
    /// 5%, lose) and with an unrolled copy saved (15%: its 35x35 3x3 and 5x5 layers, at 6 and 11%, gain).
    static let pointwiseAllowance = 104
    static let unrolledAllowance = 115

    /// Work items per thread at least, on more than one thread: 4 rather than 2 (InceptionV3's 7x1
    /// layers over 17x17 planes, 4 bands of 4 to 6 strips, on 2 threads 10.8 -> 9.7 ms; the whole
    /// model 81-82 -> 80-82 ms, EfficientNet-Lite0 7.2-7.3 -> 7.0-7.2).
    static let itemsPerThread = 4

    /// Output channels up to which a convolution of more than one tap reads its strips' input
    /// where it lies rather than packing it: a strip's pack is shared by the blocks, and with few
    /// of them costs more than it saves (measured, 1 thread, blocks of 6: InceptionV3's 147x147 3x3
    /// layers of 32 and 64 channels 5.5 -> 5.1 and 10.3 -> 9.9 ms, its stem and 5x5 layers 3-7%
    /// faster; its 35x35 3x3 layers of 96 channels 2-3% slower in place). Pointwise layers always
    /// pack: their rows are not repeated per tap, and in place EfficientNet-Lite0's first ones lose up to 20%.
    static let mostChannelsInPlace = 72

    /// Input rows (channels x taps) one pass reads for a strip: about 16 KB, half the L1 cache.
    static let passDepth = 256

    /// A group of output channels' weights for one pass: half the L2 cache.
    static let groupBytes = 256 * 1024

    /// A band's input: it stays in the core's L2 cache while every block of channels runs over it.
    /// 64 KB rather than more: more bands to share between threads (InceptionV3's 71x71 layer on 2
    /// threads 8.75 -> 8.46 ms; 1 thread and the other layers measured unchanged).
    static let bandBytes = 64 * 1024
}
