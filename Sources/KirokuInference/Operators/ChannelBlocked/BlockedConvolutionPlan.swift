/// A convolution of any window into channel-blocked output (NCHW8c, see ChannelBlocks), through
/// KirokuKernels' BlockedConvolution, from one of two inputs:
/// - an image's planes (NCHW, at most `mostChannels` channels): a network's stem, where a chain of
///   channel-blocked convolutions starts, writes the chain's layout itself instead of a move after
///   it (EfficientNet-Lite0's 3x3/2 stem and the move of its 32 x 112 x 112 output cost about
///   twice ONNX Runtime's stem alone). The planes are copied into zero-padded ones, as
///   DirectConvolutionPlan's are.
/// - channel blocks (whole blocks of 8 input channels): the 3x3, 5x5, 1x7 and 7x1 layers of
///   InceptionV3 between its Concats. Each block is copied into a zero-padded block.
/// - groups of whole channel blocks (RegNet's grouped 3x3 convolutions, 8, 16 or more channels a
///   group): each group's output blocks read only its own input blocks, a group per kernel call.
/// Tiles and work items as in BlockedPointwisePlan.
struct BlockedConvolutionPlan: DirectMethod {
    let run: ChannelBlockLoops.Convolution
    let inChannels: Int, outChannels: Int
    let window: Window2D
    /// The padded input: planes (phased rows, PaddedPlaneLayout) or blocks (PaddedBlocks).
    let planes: PaddedPlaneLayout?
    let blocks: PaddedBlocks?
    /// Per output position, where its window's first tap lies in a padded plane or block; per
    /// tap, its offset from there (floats).
    let sources: [Int]
    let tapOffsets: [Int]
    /// Tiles, each with the taps (kernel row-major) from the first that any of its positions reads
    /// inside the input to the last: InceptionV3's 7x1 windows at 17 rows read padding in a tenth
    /// of their taps, and the kernel skips them.
    let tiles: [(position: Int, count: Int, taps: Range<Int>)]
    /// Weights [pair of output blocks][group][tap][lane][16], zero past the last channel; bias per channel.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>
    /// Groups of whole blocks: a group's output blocks read its input blocks only (weights per
    /// group, each laid out as an ungrouped convolution's); 1 without groups.
    let groups: Int

    var label: String { lanes == 1 ? "blocked from planes" : groups > 1 ? "blocked by groups of \(inChannels / groups)" : "blocked" }
    var addsResidual: Bool { false }
    var readsChannelBlocks: Bool { lanes == 8 }
    var writesChannelBlocks: Bool { true }
    var pairs: Int { (outChannels / 8 + 1) / 2 }

    /// A plan, or nil when `loops` has no channel-blocked kernels, the convolution is grouped other
    /// than by whole blocks a group, its output is not whole blocks of channels, its input neither
    /// has at most `mostChannels` nor whole blocks of them, or the output plane is smaller than a tile.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let (outHeight, outWidth) = window.output
        guard let blocked = loops.channelBlocks, groups == 1 || (inChannels / groups) % 8 == 0 && (outChannels / groups) % 8 == 0,
              outChannels % 8 == 0,
              inChannels <= Self.mostChannels && groups == 1 || inChannels % 8 == 0,
              outHeight * outWidth >= BlockedPointwisePlan.tilePositions else { return nil }
        self.groups = groups
        run = blocked.convolution
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.window = window
        let (sh, sw) = window.stride
        if inChannels <= Self.mostChannels {
            let padded = PaddedPlaneLayout(window, slack: 0)
            (planes, blocks) = (padded, nil)
            // Output (oh, ow) reads padded row oh * sh from column ow * sw: phase 0, at ow.
            sources = (0..<(outHeight * outWidth)).map { p in p / outWidth * sh * padded.rowLength + p % outWidth }
            tapOffsets = padded.tapOffsets
        } else {
            let padded = PaddedBlocks(window)
            (planes, blocks) = (nil, padded)
            sources = (0..<(outHeight * outWidth)).map { p in (p / outWidth * sh * padded.width + p % outWidth * sw) * 8 }
            tapOffsets = (0..<(window.kernel.h * window.kernel.w)).map { t in
                (t / window.kernel.w * window.dilation.h * padded.width + t % window.kernel.w * window.dilation.w) * 8
            }
        }
        let (rows, columns) = (window.tapsInside(rows: true), window.tapsInside(rows: false))
        // Per position, its first and last tap inside (row-major: a tap between them may still lie outside).
        let reads = (0..<(outHeight * outWidth)).map { p -> Range<Int> in
            let (row, column) = (rows[p / outWidth], columns[p % outWidth])
            guard row.count > 0, column.count > 0 else { return 0..<0 }
            return row.first * window.kernel.w + column.first ..< (row.first + row.count - 1) * window.kernel.w + column.first + column.count
        }
        tiles = BlockedPointwisePlan.tiles(covering: outHeight * outWidth).map { tile in
            let inside = reads[tile.position..<(tile.position + tile.count)].filter { !$0.isEmpty }
            return (tile.position, tile.count, (inside.map(\.lowerBound).min() ?? 0)..<(inside.map(\.upperBound).max() ?? 0))
        }
        let taps = window.kernel.h * window.kernel.w, lanes = blocks == nil ? 1 : 8
        // Per group, [pair of output blocks][input channels by lanes][tap][lane][16], zero past the group's last channel.
        let (groupIn, groupOut) = (inChannels / groups, outChannels / groups), groupFloats = (groupOut + 15) / 16 * 16 * groupIn * taps
        var packed = Tensor(zeros: [groups * groupFloats])
        for o in 0..<outChannels {
            let (g, go) = (o / groupOut, o % groupOut)
            for c in 0..<groupIn {
                for t in 0..<taps {
                    let at = g * groupFloats + ((go / 16 * groupIn + c / lanes * lanes) * taps + t * lanes + c % lanes) * 16 + go % 16
                    packed.data[at] = weights.data[(o * groupIn + c) * taps + t]
                }
            }
        }
        self.weights = store(packed)
        self.bias = store(bias ?? Tensor(zeros: [outChannels]))
    }

    /// Input channels per group the kernel walks: 1 (planes) or 8 (blocks).
    private var lanes: Int { blocks == nil ? 1 : 8 }

    /// Floats between the kernel's groups of input channels.
    private var groupStride: Int { planes?.floats ?? blocks?.floats ?? 0 }

    /// The padded input.
    func scratchCount(threads: Int) -> Int { inChannels / lanes * groupStride }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        if let planes { planes.fill(channels: inChannels, of: x, into: context.scratch, context: context) }
        blocks?.fill(blocks: inChannels / 8, of: x, into: context.scratch, context: context)
        let plane = window.output.h * window.output.w, bounds = activation?.bounds ?? -.infinity ... .infinity
        let after = activation?.bounds == nil ? activation : nil
        if groups > 1 {
            runByGroups(y, plane: plane, bounds: bounds, after: after, context: context)
            return
        }
        let work = TileWork(tiles: tiles.count, pairs: pairs,
                            tileBytes: inChannels * window.kernel.h * window.stride.w * 4 * BlockedPointwisePlan.tilePositions,
                            threads: context.threads)
        let (groups, groupStride, lanes) = (inChannels / lanes, groupStride, lanes)
        tiles.withUnsafeBufferPointer { tiles in
            sources.withUnsafeBufferPointer { sources in
                tapOffsets.withUnsafeBufferPointer { tapOffsets in
                    context.team.parallelFor(work.count) { index in
                        let item = work.item(index)
                        run(UnsafePointer(context.scratch), groupStride, groups, lanes, sources.baseAddress!, tapOffsets, plane, weights, bias,
                            outChannels / 8, item.pairs, UnsafeBufferPointer(rebasing: tiles[item.tiles]), bounds, y)
                        if let after {
                            apply(after, to: y, plane: plane, blocks: 2 * item.pairs.lowerBound..<min(outChannels / 8, 2 * item.pairs.upperBound),
                                  positions: Self.positions(of: tiles, item.tiles), loops: context.loops)
                        }
                    }
                }
            }
        }
    }

    /// Groups of whole blocks: each group's output blocks from its own padded input blocks, a
    /// group per call, the groups shared out as TileWork shares pairs.
    private func runByGroups(_ y: UnsafeMutablePointer<Float>, plane: Int, bounds: ClosedRange<Float>, after: Activation?,
                             context: KernelContext) {
        let (inBlocks, outBlocks) = (inChannels / groups / 8, outChannels / groups / 8), taps = window.kernel.h * window.kernel.w
        let groupFloats = (outBlocks + 1) / 2 * 16 * inBlocks * 8 * taps
        let work = TileWork(tiles: tiles.count, pairs: groups,
                            tileBytes: inBlocks * 8 * window.kernel.h * window.stride.w * 4 * BlockedPointwisePlan.tilePositions,
                            threads: context.threads)
        let groupStride = groupStride
        tiles.withUnsafeBufferPointer { tiles in
            sources.withUnsafeBufferPointer { sources in
                tapOffsets.withUnsafeBufferPointer { tapOffsets in
                    context.team.parallelFor(work.count) { index in
                        let item = work.item(index)
                        for group in item.pairs {
                            run(UnsafePointer(context.scratch + group * inBlocks * groupStride), groupStride, inBlocks, 8, sources.baseAddress!,
                                tapOffsets, plane, weights + group * groupFloats, bias + group * outBlocks * 8, outBlocks,
                                0..<(outBlocks + 1) / 2, UnsafeBufferPointer(rebasing: tiles[item.tiles]), bounds,
                                y + group * outBlocks * plane * 8)
                        }
                        if let after {
                            apply(after, to: y, plane: plane, blocks: item.pairs.lowerBound * outBlocks..<item.pairs.upperBound * outBlocks,
                                  positions: Self.positions(of: tiles, item.tiles), loops: context.loops)
                        }
                    }
                }
            }
        }
    }

    /// The positions tiles `range` cover (the last may overlap the one before).
    private static func positions(of tiles: UnsafeBufferPointer<(position: Int, count: Int, taps: Range<Int>)>, _ range: Range<Int>) -> Range<Int> {
        let (first, last) = (tiles[range.lowerBound], tiles[range.upperBound - 1])
        return BlockedPointwisePlan.positions((first.position, first.count), (last.position, last.count))
    }

    /// Input channels up to which a convolution counts as a stem (an image's 1, 3 or 4).
    static let mostChannels = 4
}

/// Channel blocks copied into zero-padded ones: each block's plane framed by the window's pads,
/// `width` positions a row, 8 floats a position.
struct PaddedBlocks {
    /// The input plane, and where it starts in the padded one.
    let input: (h: Int, w: Int)
    let top: Int, left: Int
    let height: Int, width: Int

    /// Framed by the window's pads.
    init(_ window: Window2D) {
        self.init(input: window.input, top: window.pads.top, left: window.pads.left,
                  height: window.input.h + window.pads.top + window.pads.bottom, width: window.input.w + window.pads.left + window.pads.right)
    }

    /// The input at (`top`, `left`) of a padded plane `height` x `width` (at least the input's
    /// size from there).
    init(input: (h: Int, w: Int), top: Int, left: Int, height: Int, width: Int) {
        (self.input, self.top, self.left, self.height, self.width) = (input, top, left, height, width)
    }

    /// Floats one padded block takes.
    var floats: Int { height * width * 8 }

    /// Copies `blocks` blocks from `x` into padded ones `floats` apart from `target`, zeroing
    /// only the padding (the scratch is shared with other steps), a block per loop index.
    func fill(blocks: Int, of x: UnsafePointer<Float>, into target: UnsafeMutablePointer<Float>, context: KernelContext) {
        let (inHeight, inWidth) = input, (top, left) = (top, left)
        let rowFloats = width * 8, right = (width - left - inWidth) * 8
        context.team.parallelFor(blocks) { b in
            let source = x + b * inHeight * inWidth * 8, padded = target + b * floats
            padded.update(repeating: 0, count: top * rowFloats)
            (padded + (top + inHeight) * rowFloats).update(repeating: 0, count: (height - top - inHeight) * rowFloats)
            for h in 0..<inHeight {
                let row = padded + (top + h) * rowFloats
                row.update(repeating: 0, count: left * 8)
                (row + left * 8).update(from: source + h * inWidth * 8, count: inWidth * 8)
                (row + (left + inWidth) * 8).update(repeating: 0, count: right)
            }
        }
    }
}
