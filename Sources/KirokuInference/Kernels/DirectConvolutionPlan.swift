/// How a convolution runs through KirokuKernels' DirectConvolution (the AVX2 build): weights
/// packed at load in blocks of 6 output channels, the input read where it lies (pointwise) or
/// from a zero-padded copy, and the output cut into strips of 16 positions, grouped in bands whose
/// input stays in cache while every block of channels is computed over them.
///
/// Strips run along the flattened padded plane at stride 1: output (oh, ow) reads padded
/// (oh + ki, ow + kj), a fixed offset per tap, so a strip may cross rows. Where the padded row is
/// wider than the output's, the results land in a grid of padded rows (scratch) and are copied out
/// without the extra columns. Strided convolutions run strips along each output row instead (the
/// row's last strip ends at its end, overlapping the one before). Shapes where either would waste
/// much (rows much narrower than their padding or than a strip) stay with im2col and sgemm.
struct DirectConvolutionPlan {
    let block: KernelLoops.DirectBlock
    let inChannels: Int, outChannels: Int
    let window: Window2D
    /// The padded copy's layout; nil for pointwise convolutions, which read the input as it is.
    let padded: PaddedPlaneLayout?
    /// Floats between input channels where the strips read them.
    let channelStride: Int
    let tapOffsets: [Int]
    let strips: [(source: Int, target: Int)]
    /// Consecutive strips, each band's input about `bandBytes`.
    let bands: [Range<Int>]
    /// Row length of the grid results land in before the copy out; nil: straight into the output.
    let gridPitch: Int?
    /// Weights [block][input channel][tap][6], zero for the channels past the last; bias per
    /// channel, zero-padded to whole blocks.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    var blocks: Int { (outChannels + 5) / 6 }
    var outputPlane: Int { window.output.h * window.output.w }

    /// A plan, or nil when `loops` has no direct convolution or the shape is not worth it;
    /// `store` keeps the packed weights for the session's life.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let taps = window.kernel.h * window.kernel.w
        let pointwise = window.kernel == (1, 1) && window.stride == (1, 1) && window.pads == (0, 0, 0, 0)
        guard let block = loops.directConvolution, groups == 1, inChannels * taps <= Self.maximumDepth,
              !pointwise || outChannels >= 2 * inChannels else { return nil }
        let (outHeight, outWidth) = window.output, strip = Self.stripLength
        let layout = pointwise ? nil : PaddedPlaneLayout(window, slack: 0)
        let pitch = layout?.rowLength ?? outWidth
        var strips: [(source: Int, target: Int)] = []
        let positionsPerStrip: Int  // input positions one strip's output reads, for band sizing
        if window.stride == (1, 1) {
            // Flat strips over outHeight rows of `pitch`; too many padding columns waste the work.
            let total = outHeight * pitch
            guard total >= strip, pitch * 5 <= outWidth * 6, Self.computed(total) * 10 <= total * 11 else { return nil }
            strips = Self.starts(total).map { ($0, $0) }
            positionsPerStrip = strip
        } else {
            guard outWidth >= strip, Self.computed(outWidth) * 10 <= outWidth * 11, let layout else { return nil }
            for oh in 0..<outHeight {
                strips += Self.starts(outWidth).map { (oh * window.stride.h * layout.rowLength + $0, oh * outWidth + $0) }
            }
            positionsPerStrip = strip * window.stride.h * window.stride.w
        }
        self.block = block
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.window = window
        padded = layout
        channelStride = layout?.floats ?? window.input.h * window.input.w
        tapOffsets = layout?.tapOffsets ?? [0]
        gridPitch = window.stride == (1, 1) && pitch != outWidth ? pitch : nil
        // Bands: strips whose input is about bandBytes; a row's overlapping last strip stays with
        // the strip it overlaps, so no two threads write the same place.
        let perBand = max(2, Self.bandBytes / max(inChannels * positionsPerStrip * 4, 1))
        var bands: [Range<Int>] = []
        var start = 0
        while start < strips.count {
            var end = min(start + perBand, strips.count)
            if strips.count - end == 1 { end += 1 }
            bands.append(start..<end)
            start = end
        }
        self.strips = strips
        self.bands = bands

        let blocks = (outChannels + 5) / 6
        var packed = Tensor(zeros: [blocks * inChannels * taps * 6])
        var paddedBias = Tensor(zeros: [blocks * 6])
        for o in 0..<outChannels {
            paddedBias.data[o] = bias?.data[o] ?? 0
            for c in 0..<inChannels {
                for t in 0..<taps {
                    packed.data[((o / 6 * inChannels + c) * taps + t) * 6 + o % 6] = weights.data[(o * inChannels + c) * taps + t]
                }
            }
        }
        self.weights = store(packed)
        self.bias = store(paddedBias)
    }

    /// Positions the strips compute to cover `count` (the last strip overlaps the one before).
    private static func computed(_ count: Int) -> Int { (count + stripLength - 1) / stripLength * stripLength }

    /// Strip starts covering `count` positions: every 16, the last ending at the end.
    private static func starts(_ count: Int) -> [Int] {
        Array(stride(from: 0, to: count - stripLength, by: stripLength)) + [count - stripLength]
    }

    /// Scratch floats: the padded input and the grid.
    var scratchCount: Int { paddedFloats + (gridPitch.map { outChannels * window.output.h * $0 } ?? 0) }

    /// The padded input's floats, with the zeros after it that the last strip's taps may reach.
    private var paddedFloats: Int { padded.map { inChannels * $0.floats + tail } ?? 0 }
    private var tail: Int { window.kernel.w * window.dilation.w + Self.stripLength }

    /// Whether a fused residual can be added as results are stored (not when they go to a grid).
    var addsResidual: Bool { gridPitch == nil }

    /// One image: input `x`, output `y`, `added` (a fused residual laid out as the output) added,
    /// `activation` applied (a Relu or Clip as results are stored, others after).
    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        var source = x
        if let padded {
            let copy = context.scratch, plane = window.input.h * window.input.w
            context.team.parallelFor(inChannels) { c in padded.fill(x + c * plane, into: copy + c * padded.floats, loops: context.loops) }
            (copy + inChannels * padded.floats).update(repeating: 0, count: tail)
            source = UnsafePointer(copy)
        }
        let grid = gridPitch.map { _ in context.scratch + paddedFloats }
        let target = grid ?? y, targetPlane = gridPitch.map { window.output.h * $0 } ?? outputPlane
        let bounds = activation?.bounds ?? -.infinity ... .infinity
        let threads = context.threads
        let chunks = threads == 1 ? 1 : max(1, min(blocks, (2 * threads + bands.count - 1) / bands.count))
        let perChunk = (blocks + chunks - 1) / chunks
        tapOffsets.withUnsafeBufferPointer { offsets in
            strips.withUnsafeBufferPointer { strips in
                context.team.parallelFor(bands.count * chunks) { index in
                    let band = bands[index / chunks], chunk = index % chunks
                    let first = chunk * perChunk * 6, count = min(outChannels, (chunk + 1) * perChunk * 6) - first
                    guard count > 0 else { return }
                    block(source, channelStride, inChannels, offsets, weights + first * inChannels * offsets.count, bias + first,
                          count, bounds, added.map { $0 + first * targetPlane },
                          UnsafeBufferPointer(rebasing: strips[band]), target + first * targetPlane, targetPlane)
                }
            }
        }
        let (outHeight, outWidth) = window.output
        guard grid != nil || (activation != nil && activation?.bounds == nil) else { return }
        context.team.parallelFor(outChannels) { c in
            let out = y + c * outputPlane
            if let grid, let pitch = gridPitch {
                for oh in 0..<outHeight { (out + oh * outWidth).update(from: grid + c * targetPlane + oh * pitch, count: outWidth) }
            }
            if let activation, activation.bounds == nil {
                activation.apply(UnsafeMutableBufferPointer(start: out, count: outputPlane), loops: context.loops)
            }
        }
    }

    /// Output positions one strip computes.
    static let stripLength = 16

    /// Input channels times taps above which sgemm stays faster: a strip's input then outgrows the
    /// L1 cache (measured on InceptionV3 and EfficientNet-Lite0: 27 to 288 gain, 576 and more lose).
    /// Pointwise convolutions, where sgemm needs no unrolled copy either, gain only when they widen
    /// (at least twice the channels out as in: MobileNet's and EfficientNet's expansions); those
    /// that narrow lose about 15%.
    static let maximumDepth = 288

    /// A band's input: it stays in the core's L2 cache while every block of channels runs over it.
    static let bandBytes = 128 * 1024
}
