/// A convolution of an image (NCHW, at most `mostChannels` channels) into channel-blocked output
/// (NCHW8c, see ChannelBlocks), through KirokuKernels' BlockedFromPlanes: a network's stem, where
/// a chain of channel-blocked convolutions starts, writes the chain's layout itself instead of a
/// move after it (EfficientNet-Lite0's 3x3/2 stem and the move of its 32 x 112 x 112 output cost
/// about twice ONNX Runtime's stem alone). The input channels are copied into zero-padded planes
/// (as DirectConvolutionPlan's are); tiles and work items as in BlockedPointwisePlan.
struct BlockedFromPlanesPlan: DirectMethod {
    let run: ChannelBlockLoops.FromPlanes
    let inChannels: Int, outChannels: Int
    let window: Window2D
    let padded: PaddedPlaneLayout
    /// Per output position, where its window's first tap lies in a padded plane.
    let sources: [Int]
    let tiles: [(position: Int, count: Int)]
    /// Weights [pair of output blocks][input channel][tap][16], zero past the last channel; bias per channel.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    var label: String { "blocked from planes" }
    var addsResidual: Bool { false }
    var readsChannelBlocks: Bool { false }
    var writesChannelBlocks: Bool { true }
    var pairs: Int { (outChannels / 8 + 1) / 2 }

    /// A plan, or nil when `loops` has no channel-blocked kernels, the convolution is grouped,
    /// its output is not whole blocks of channels, its input has more than `mostChannels`, or the
    /// output plane is smaller than a tile.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let (outHeight, outWidth) = window.output
        guard let blocked = loops.channelBlocks, groups == 1, outChannels % 8 == 0, inChannels <= Self.mostChannels,
              outHeight * outWidth >= BlockedPointwisePlan.tilePositions else { return nil }
        run = blocked.fromPlanes
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.window = window
        let padded = PaddedPlaneLayout(window, slack: 0)
        self.padded = padded
        // Output (oh, ow) reads padded row oh * sh from column ow * sw: phase 0, at ow.
        sources = (0..<(outHeight * outWidth)).map { p in p / outWidth * window.stride.h * padded.rowLength + p % outWidth }
        tiles = BlockedPointwisePlan.tiles(covering: outHeight * outWidth)
        let taps = window.kernel.h * window.kernel.w
        var packed = Tensor(zeros: [(outChannels + 15) / 16 * 16 * inChannels * taps])
        for o in 0..<outChannels {
            for c in 0..<inChannels {
                for t in 0..<taps { packed.data[((o / 16 * inChannels + c) * taps + t) * 16 + o % 16] = weights.data[(o * inChannels + c) * taps + t] }
            }
        }
        self.weights = store(packed)
        self.bias = store(bias ?? Tensor(zeros: [outChannels]))
    }

    /// The padded planes.
    func scratchCount(threads: Int) -> Int { inChannels * padded.floats }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        padded.fill(channels: inChannels, of: x, into: context.scratch, context: context)
        let plane = window.output.h * window.output.w, bounds = activation?.bounds ?? -.infinity ... .infinity
        let taps = window.kernel.h * window.kernel.w
        let work = TileWork(tiles: tiles.count, pairs: pairs, tileBytes: inChannels * taps * 4 * BlockedPointwisePlan.tilePositions,
                            threads: context.threads)
        tiles.withUnsafeBufferPointer { tiles in
            sources.withUnsafeBufferPointer { sources in
                padded.tapOffsets.withUnsafeBufferPointer { tapOffsets in
                    context.team.parallelFor(work.count) { index in
                        guard let item = work.item(index) else { return }
                        run(UnsafePointer(context.scratch), padded.floats, inChannels, sources.baseAddress!, tapOffsets, plane, weights, bias,
                            outChannels / 8, item.pairs, UnsafeBufferPointer(rebasing: tiles[item.tiles]), bounds, y)
                    }
                }
            }
        }
        applyAfter(activation, to: y, channels: outChannels, plane: plane, context: context)
    }

    /// Input channels up to which a convolution counts as a stem (an image's 1, 3 or 4).
    static let mostChannels = 4
}
