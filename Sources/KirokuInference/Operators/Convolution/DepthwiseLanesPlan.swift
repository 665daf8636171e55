/// A depthwise convolution over a small plane run 8 channels at a time, a channel per vector lane
/// (KirokuKernels' DepthwiseLanes, the AVX2 build): each block of 8 channels is interleaved into a
/// zero-padded buffer per thread (8 floats per position), its sums computed a full vector per
/// output position and transposed back into the channels' planes as they are stored. On the rows
/// of 7 to 28 outputs late in a network this replaces DepthwiseChannel's part-empty vectors,
/// lane-by-lane stores and per-channel padded copies.
struct DepthwiseLanesPlan: DirectMethod {
    let interleave: KernelLoops.InterleaveLanes
    let accumulate: KernelLoops.LanesAccumulate
    let channels: Int
    let inputPlane: Int, outputPlane: Int
    let layout: LanesLayout
    /// Weights [block of 8 channels][tap][8] and bias [block][8], zero past the last channel.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    var label: String { "depthwise by lanes" }
    var addsResidual: Bool { false }
    var blocks: Int { (channels + 7) / 8 }

    /// A plan, or nil when `loops` lacks the kernel, the convolution is not depthwise, either
    /// plane holds fewer than 8 positions (one transpose's worth), or the output rows are wider than
    /// `widestRow` (there DepthwiseChannel fills its vectors and needs no interleaving).
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let (height, width) = window.input, (outHeight, outWidth) = window.output
        guard let interleave = loops.interleaveLanes, let accumulate = loops.lanesAccumulate,
              groups == inChannels, groups == outChannels, height * width >= 8, outHeight * outWidth >= 8,
              outWidth <= Self.widestRow else { return nil }
        self.interleave = interleave
        self.accumulate = accumulate
        channels = inChannels
        inputPlane = height * width
        outputPlane = outHeight * outWidth
        layout = LanesLayout(window)
        let taps = window.kernel.h * window.kernel.w
        let lanes = (channels + 7) / 8 * 8
        var packed = Tensor(zeros: [lanes * taps])
        var paddedBias = Tensor(zeros: [lanes])
        for c in 0..<channels {
            paddedBias.data[c] = bias?.data[c] ?? 0
            for t in 0..<taps { packed.data[(c / 8 * taps + t) * 8 + c % 8] = weights.data[c * taps + t] }
        }
        self.weights = store(packed)
        self.bias = store(paddedBias)
    }

    /// One padded buffer per thread.
    func scratchCount(threads: Int) -> Int { threads * layout.paddedFloats }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        // Each thread's padding is zeroed once per image; every block rewrites the rest.
        let paddedFloats = layout.paddedFloats
        context.scratch.update(repeating: 0, count: context.threads * paddedFloats)
        let taps = layout.tapOffsets.count, bounds = activation?.bounds ?? -.infinity ... .infinity
        layout.positions.withUnsafeBufferPointer { positions in
            layout.sources.withUnsafeBufferPointer { sources in
                layout.tapOffsets.withUnsafeBufferPointer { tapOffsets in
                    context.team.parallelFor(blocks) { block, worker in
                        let first = block * 8, count = min(8, channels - first)
                        let padded = context.scratch + worker * paddedFloats
                        interleave(x + first * inputPlane, inputPlane, count, positions, padded)
                        accumulate(UnsafePointer(padded), tapOffsets, sources, weights + block * taps * 8, bias + first,
                                   bounds, count, y + first * outputPlane, outputPlane)
                    }
                }
            }
        }
        applyAfter(activation, to: y, channels: channels, plane: outputPlane, context: context)
    }

    /// Output rows wider than this stay with DepthwiseChannel.
    static let widestRow = 28
}

/// A zero-padded copy of a plane with a vector of 8 lanes (channels) per position, and where a
/// depthwise convolution's taps read it: DepthwiseLanesPlan's interleaved blocks and
/// BlockedDepthwisePlan's copies of small planes.
struct LanesLayout {
    /// Floats of one padded copy.
    let paddedFloats: Int
    /// Per input position, where its 8 lanes go in the copy (floats).
    let positions: [Int]
    /// Per output position, where its tap-0 inputs are in the copy; per tap, its offset.
    let sources: [Int]
    let tapOffsets: [Int]

    init(_ window: Window2D) {
        let (height, width) = window.input, outWidth = window.output.w
        let (top, left) = (window.pads.top, window.pads.left)
        let paddedWidth = width + left + window.pads.right
        paddedFloats = (height + top + window.pads.bottom) * paddedWidth * 8
        positions = (0..<(height * width)).map { p in ((p / width + top) * paddedWidth + p % width + left) * 8 }
        sources = (0..<(window.output.h * outWidth)).map { p in
            (p / outWidth * window.stride.h * paddedWidth + p % outWidth * window.stride.w) * 8
        }
        let kw = window.kernel.w
        tapOffsets = (0..<(window.kernel.h * kw)).map { t in (t / kw * window.dilation.h * paddedWidth + t % kw * window.dilation.w) * 8 }
    }
}
