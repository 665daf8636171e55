/// A 3x3 stride-1 convolution between channel blocks (NCHW8c, see ChannelBlocks) by Winograd's
/// F(4x4, 3x3) (KirokuKernels' Winograd): a quarter of a direct convolution's multiply-adds. The
/// input is copied into zero-padded blocks framing whole tiles of 4x4 outputs; each tile's 6x6
/// window is transformed into 36 points; for each point, the matrix of tiles by input channels is
/// multiplied by the weights' transform at that point (input by output channels, transformed and
/// packed into PackedProduct's panels at load); each tile's 36 products are transformed back into
/// its 16 outputs, with bias, residual and a clamp as they are stored. Tiles go in bands of tile
/// rows whose transformed values stay in cache between the three stages.
///
/// Its rounding differs from a direct convolution's (about 7 times the error per layer, measured
/// in float32 against exact sums: 1e-6 of the outputs' scale).
struct WinogradPlan: DirectMethod {
    let blocked: ChannelBlockLoops
    let multiply: KernelLoops.PackedMultiply
    let inChannels: Int, outChannels: Int
    let window: Window2D
    /// The input in zero-padded blocks: the window's top and left pads, then zeros to the last tile's end.
    let padded: PaddedBlocks
    let tilesAcross: Int, tilesDown: Int
    /// Tile rows per band.
    let bandRows: Int
    /// For each of the 36 points, the weights' transform (G g Gᵀ) as a matrix of input by output
    /// channels in PackedProduct's panels, `pointFloats` apart; bias per channel.
    let weights: UnsafePointer<Float>
    let pointFloats: Int
    let bias: UnsafePointer<Float>

    var label: String { Self.label }
    /// How `kiroku bench --profile` names it (its variants begin so).
    static let label = "blocked winograd"
    var addsResidual: Bool { true }
    var readsChannelBlocks: Bool { true }
    var writesChannelBlocks: Bool { true }

    /// A plan, or nil when `loops` lacks the channel-blocked kernels or the packed products, the
    /// convolution is not an ungrouped 3x3 one of stride 1 and dilation 1 between whole blocks of
    /// channels, or it is one of those the direct kernels run faster: fewer than `fewestChannels`
    /// input channels, or transformed weights over `mostWeightBytes`.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let (tile, points) = (Self.outputTile, Self.points)
        guard let blocked = loops.channelBlocks, let multiply = loops.packedProduct, groups == 1, window.kernel == (3, 3),
              window.stride == (1, 1), window.dilation == (1, 1), inChannels % 8 == 0, outChannels % 8 == 0,
              inChannels >= Self.fewestChannels, points * inChannels * outChannels * 4 <= Self.mostWeightBytes else { return nil }
        (self.blocked, self.multiply) = (blocked, multiply)
        (self.inChannels, self.outChannels, self.window) = (inChannels, outChannels, window)
        (tilesDown, tilesAcross) = ((window.output.h + tile - 1) / tile, (window.output.w + tile - 1) / tile)
        padded = PaddedBlocks(input: window.input, top: window.pads.top, left: window.pads.left,
                              height: tilesDown * tile + 2, width: tilesAcross * tile + 2)
        // Bands whose transformed input and products take about `bandBytes`, at least a tile row.
        let rowBytes = points * tilesAcross * (inChannels + outChannels) * 4
        bandRows = max(1, min(tilesDown, Self.bandBytes / rowBytes))
        let transformed = Self.transformWeights(weights, inChannels: inChannels, outChannels: outChannels)
        var packed: [Float] = []
        for point in 0..<points {
            packed += MatMulKernel.panels(n: outChannels, k: inChannels) { c, o in transformed[(point * inChannels + c) * outChannels + o] }
        }
        pointFloats = packed.count / points
        self.weights = store(Tensor(shape: [packed.count], data: packed))
        self.bias = store(bias ?? Tensor(zeros: [outChannels]))
    }

    /// Outputs along a tile's side, and points of a transformed tile.
    static let outputTile = 4
    static let points = 36

    /// Below this many input channels the transforms outweigh the products' saving (measured on
    /// Zen 4, two chained 3x3 layers: 16 channels over 112x112 level with the direct kernels, 24
    /// over 96x96 1.8x faster).
    static let fewestChannels = 24
    /// Transformed weights (4 times the direct kernels' for F(4x4, 3x3)) above this are read from
    /// memory rather than the L3 cache on every image: 512 by 512 channels (38 MB) took 1.03x and
    /// 1.2x the direct kernels' time at 7x7 on 1 and 2 threads; 256 by 256 (9.4 MB) at 14x14 0.6x.
    static let mostWeightBytes = 16 * 1024 * 1024

    /// What one band's transformed input and products take at most (unless one tile row takes more).
    static let bandBytes = 2 * 1024 * 1024

    /// G of F(4x4, 3x3) at the points 0, ±1, ±2 and infinity.
    static let g: [[Double]] = [[1.0 / 4, 0, 0], [-1.0 / 6, -1.0 / 6, -1.0 / 6], [-1.0 / 6, 1.0 / 6, -1.0 / 6],
                                [1.0 / 24, 1.0 / 12, 1.0 / 6], [1.0 / 24, -1.0 / 12, 1.0 / 6], [0, 0, 1]]

    /// G g Gᵀ for each output and input channel's 3x3 weights g (computed in Double), as
    /// [point][input channel][output channel].
    static func transformWeights(_ weights: Tensor, inChannels: Int, outChannels: Int) -> [Float] {
        let n = outputTile + 2
        var transformed = [Float](repeating: 0, count: n * n * inChannels * outChannels)
        var left = [Double](repeating: 0, count: n * 3)
        for o in 0..<outChannels {
            for c in 0..<inChannels {
                let kernel = (o * inChannels + c) * 9
                // G g (n x 3), then (G g) Gᵀ (n x n).
                for i in 0..<n {
                    for j in 0..<3 {
                        left[i * 3 + j] = (0..<3).reduce(0.0) { $0 + g[i][$1] * Double(weights.data[kernel + $1 * 3 + j]) }
                    }
                }
                for i in 0..<n {
                    for j in 0..<n {
                        let value = left[i * 3] * g[j][0] + left[i * 3 + 1] * g[j][1] + left[i * 3 + 2] * g[j][2]
                        transformed[((i * n + j) * inChannels + c) * outChannels + o] = Float(value)
                    }
                }
            }
        }
        return transformed
    }

    /// The padded input, then a band's transformed input and its products.
    func scratchCount(threads: Int) -> Int {
        inChannels / 8 * padded.floats + Self.points * bandRows * tilesAcross * (inChannels + outChannels)
    }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        let (inBlocks, outBlocks, points) = (inChannels / 8, outChannels / 8, Self.points)
        padded.fill(blocks: inBlocks, of: x, into: context.scratch, context: context)
        let source = UnsafePointer(context.scratch), transformed = context.scratch + inBlocks * padded.floats
        let bounds = activation?.bounds ?? -.infinity ... .infinity
        let panelCount = (outChannels + MatMulKernel.panelColumns - 1) / MatMulKernel.panelColumns
        for firstRow in stride(from: 0, to: tilesDown, by: bandRows) {
            let rows = firstRow..<min(tilesDown, firstRow + bandRows), count = rows.count * tilesAcross
            let products = transformed + points * count * inChannels
            // Each tile row's windows, every input block, into the band's matrices.
            let first = rows.lowerBound * tilesAcross
            context.team.parallelFor(rows.count) { row in
                let tiles = first + row * tilesAcross..<first + (row + 1) * tilesAcross
                blocked.winogradInput(source, inBlocks, padded.floats, padded.width * 8, tilesAcross, tiles, first, count, transformed)
            }
            // Each point's product, tiles by input channels times input by output channels.
            context.team.parallelFor(points) { point in
                multiply(transformed + point * count * inChannels, inChannels, inChannels, weights + point * pointFloats, outChannels,
                         0..<count, 0..<panelCount, nil, -.infinity ... .infinity, products + point * count * outChannels, outChannels)
            }
            // Back to outputs: each tile row, every output block.
            context.team.parallelFor(rows.count) { row in
                let tiles = first + row * tilesAcross..<first + (row + 1) * tilesAcross
                blocked.winogradOutput(products, outChannels, tilesAcross, tiles, first, count, 0..<outBlocks, bias, bounds, added,
                                       window.output, y)
            }
        }
        // A block's plane is 8 floats a position, contiguous.
        applyAfter(activation, to: y, channels: outBlocks, plane: window.output.h * window.output.w * 8, context: context)
    }
}
