/// A depthwise convolution whose input and output are channel-blocked (NCHW8c, see
/// ChannelBlocks), through KirokuKernels' BlockedDepthwise: any kernel, stride, dilation and
/// padding. Wide rows are read where they lie, a block of 8 channels per work item, cut into
/// bands of output rows where the blocks alone are too few to share between the threads; narrow
/// ones (mostly edge) from a zero-padded copy of each block, 8 outputs at a time wherever they lie.
struct BlockedDepthwisePlan: DirectMethod {
    let loops: ChannelBlockLoops
    let channels: Int
    let window: Window2D
    /// The padded copy's geometry, for output rows narrower than `widestCopied`; nil: read in place.
    let copied: LanesLayout?
    /// Weights [block][tap][8]; bias per channel.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    var label: String { "blocked depthwise" }
    var readsChannelBlocks: Bool { true }
    var writesChannelBlocks: Bool { true }
    var addsResidual: Bool { false }
    var blocks: Int { channels / 8 }

    /// A plan, or nil when `loops` has no channel-blocked kernels or the convolution is not a
    /// depthwise one over whole blocks of channels.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        guard let blocked = loops.channelBlocks, groups == inChannels, groups == outChannels, inChannels % 8 == 0 else { return nil }
        self.loops = blocked
        channels = inChannels
        self.window = window
        copied = window.output.w < Self.widestCopied && window.output.h * window.output.w >= 8 ? LanesLayout(window) : nil
        let taps = window.kernel.h * window.kernel.w
        var packed = Tensor(zeros: [channels * taps])
        for c in 0..<channels {
            for t in 0..<taps { packed.data[(c / 8 * taps + t) * 8 + c % 8] = weights.data[c * taps + t] }
        }
        self.weights = store(packed)
        self.bias = store(bias ?? Tensor(zeros: [channels]))
    }

    func scratchCount(threads: Int) -> Int { threads * (copied?.paddedFloats ?? 0) }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        let (input, output) = (window.input, window.output), bounds = activation?.bounds ?? -.infinity ... .infinity
        // An activation that is not a clamp runs on each block's output as it is written; a clamp is in the loop.
        let after = activation?.bounds == nil ? activation : nil
        let (inputPlane, outputPlane) = (input.h * input.w, output.h * output.w)
        let taps = window.kernel.h * window.kernel.w
        if let copied {
            // Each thread's padding is zeroed once per image; every block rewrites the rest, row by row.
            context.scratch.update(repeating: 0, count: context.threads * copied.paddedFloats)
            copied.sources.withUnsafeBufferPointer { sources in
                copied.tapOffsets.withUnsafeBufferPointer { tapOffsets in
                    context.team.parallelFor(blocks) { block, worker in
                        let padded = context.scratch + worker * copied.paddedFloats, source = x + block * inputPlane * 8
                        for h in 0..<input.h {
                            (padded + copied.positions[h * input.w]).update(from: source + h * input.w * 8, count: input.w * 8)
                        }
                        loops.gathered(UnsafePointer(padded), sources, tapOffsets, weights + block * taps * 8, bias + block * 8, bounds,
                                       y + block * outputPlane * 8)
                        if let after {
                            apply(after, to: y, plane: outputPlane, blocks: block..<block + 1, positions: 0..<outputPlane, loops: context.loops)
                        }
                    }
                }
            }
            return
        }
        let bands = context.threads == 1 ? 1
            : max(1, min(output.h, (DirectConvolutionPlan.itemsPerThread * context.threads + blocks - 1) / blocks))
        let perBand = (output.h + bands - 1) / bands
        context.team.parallelFor(blocks * bands) { index in
            let (block, band) = (index / bands, index % bands)
            let rows = band * perBand..<min(output.h, (band + 1) * perBand)
            guard !rows.isEmpty else { return }
            loops.depthwise(rows, x + block * inputPlane * 8, input, y + block * outputPlane * 8, output, window.kernel, window.stride,
                            window.dilation, (window.pads.top, window.pads.left), weights + block * taps * 8,
                            bias + block * 8, bounds)
            if let after {
                apply(after, to: y, plane: outputPlane, blocks: block..<block + 1, positions: rows.lowerBound * output.w..<rows.upperBound * output.w,
                      loops: context.loops)
            }
        }
    }

    /// Output rows narrower than this are computed from padded copies (measured on EfficientNet-Lite0,
    /// 1 thread: at 64 its 56-wide layers run 7-58% slower from copies; at 16 its 28-wide 5x5
    /// stride-1 layer runs 20% slower in place, the stride-2 one 8% faster).
    static let widestCopied = 32
}
