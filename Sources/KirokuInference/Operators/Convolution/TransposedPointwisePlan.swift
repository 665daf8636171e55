/// A pointwise convolution over a plane too small for DirectConvolutionPlan's strips of 16
/// positions without waste (planes of at most 64, as EfficientNet's and MobileNet's 7x7 layers), run
/// the other way round through KirokuKernels' DirectConvolution.transposed: 6 or 5 positions by 16
/// output channels at a time. The input of every tile of positions is packed once per image
/// (the whole input, a few hundred KB, stays in L2); each thread takes blocks of 16 output
/// channels, whose weights (packed at load) are then read once.
struct TransposedPointwisePlan: DirectMethod {
    let function: KernelLoops.TransposedBlock
    let pack: KernelLoops.PackPositions
    let inChannels: Int, outChannels: Int, plane: Int
    /// Each tile's first position and count: tiles of 6 and of 5 covering the plane exactly.
    let tiles: [(position: Int, count: Int)]
    /// Weights [block of 16 output channels][input channel][16]; bias per output channel.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    var label: String { "direct by channels" }
    var addsResidual: Bool { true }

    /// A plan, or nil when `loops` lacks the kernel or the convolution is not pointwise with
    /// output channels in sixteens over a small plane its tiles cover exactly.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let (size, width) = (Self.tilePositions, Self.tileChannels)
        let plane = window.output.h * window.output.w
        guard let function = loops.transposedPointwise, let pack = loops.packPositions, groups == 1,
              window.kernel == (1, 1), window.stride == (1, 1), window.pads == (0, 0, 0, 0),
              outChannels % width == 0, plane >= size, plane <= Self.largestPlane else { return nil }
        guard let tiles = Self.tiles(covering: plane) else { return nil }
        self.tiles = tiles
        self.function = function
        self.pack = pack
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.plane = plane
        var packed = Tensor(zeros: [outChannels * inChannels])
        for o in 0..<outChannels {
            for c in 0..<inChannels { packed.data[(o / width * inChannels + c) * width + o % width] = weights.data[o * inChannels + c] }
        }
        self.weights = store(packed)
        self.bias = store(bias ?? Tensor(zeros: [outChannels]))
    }

    /// The packed input of every tile (a tile's starts at its first position times the input channels).
    func scratchCount(threads: Int) -> Int { plane * inChannels }

    /// Tiles of 6 and 5 positions that add up to `plane` (the fewest), nil where none do (7, 8, 9,
    /// 13, 14, 19: tiles that overlap would compute a quarter more or worse; those stay with sgemm).
    static func tiles(covering plane: Int) -> [(position: Int, count: Int)]? {
        let size = tilePositions
        guard let fives = (0..<size).first(where: { plane - $0 * (size - 1) >= 0 && (plane - $0 * (size - 1)) % size == 0 }) else {
            return nil
        }
        let counts = Array(repeating: size, count: (plane - fives * (size - 1)) / size) + Array(repeating: size - 1, count: fives)
        return zip(counts.reduce(into: [0]) { $0.append($0.last! + $1) }, counts).map { ($0, $1) }
    }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        let panels = context.scratch
        tiles.withUnsafeBufferPointer { tiles in
            context.team.parallelFor(tiles.count) { i in
                pack(x, inChannels, plane, UnsafeBufferPointer(rebasing: tiles[i...i]), panels + tiles[i].position * inChannels)
            }
            context.team.parallelFor(outChannels / Self.tileChannels) { b in
                function(UnsafePointer(panels), inChannels, weights, bias, b..<(b + 1), activation?.bounds ?? -.infinity ... .infinity,
                         added, tiles, y, plane)
            }
        }
        applyAfter(activation, to: y, channels: outChannels, plane: plane, context: context)
    }

    /// Positions (at most) and output channels of a tile (DirectConvolution.transposedPositions, ...Channels).
    static let tilePositions = 6
    static let tileChannels = 16

    /// Planes above this stay with sgemm (measured: 7x7 gains 7-12%, 14x14 and 17x17 lose 5-20%,
    /// the scattered stores of each tile then weighing more than sgemm's packing).
    static let largestPlane = 64
}

/// A convolution method that replaces im2col and sgemm: the AVX2 build's direct kernels.
protocol DirectMethod {
    /// Its packed weights (the convolution keeps no other copy).
    var weights: UnsafePointer<Float> { get }
    /// How `kiroku bench --profile` names it.
    var label: String { get }
    /// Whether a fused residual can be added as results are stored.
    var addsResidual: Bool { get }
    /// Whether its input, and its output (and a fused residual), are channel-blocked (NCHW8c) rather than NCHW.
    var readsChannelBlocks: Bool { get }
    var writesChannelBlocks: Bool { get }
    func scratchCount(threads: Int) -> Int
    /// One image: input `x`, output `y`, `added` (a fused residual laid out as the output) added,
    /// `activation` applied (a Relu or Clip as results are stored, others after).
    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext)
}

extension DirectMethod {
    var readsChannelBlocks: Bool { false }
    var writesChannelBlocks: Bool { false }

    /// Runs an activation that is not a clamp (HardSwish, Sigmoid, ...) over the finished output,
    /// a channel per loop index.
    func applyAfter(_ activation: Activation?, to y: UnsafeMutablePointer<Float>, channels: Int, plane: Int, context: KernelContext) {
        guard let activation, activation.bounds == nil else { return }
        context.team.parallelFor(channels) { c in
            activation.apply(UnsafeMutableBufferPointer(start: y + c * plane, count: plane), loops: context.loops)
        }
    }

    /// Runs an activation that is not a clamp over `positions` of output `blocks` (channel-blocked
    /// layout, planes of `plane` positions) as soon as a work item has written them, while they are
    /// still in cache (Swish after each of EfficientNet-B0's expansions: a third of its time as a
    /// pass of its own).
    func apply(_ activation: Activation?, to y: UnsafeMutablePointer<Float>, plane: Int, blocks: Range<Int>, positions: Range<Int>,
               loops: KernelLoops) {
        guard let activation, activation.bounds == nil else { return }
        for block in blocks {
            activation.apply(UnsafeMutableBufferPointer(start: y + (block * plane + positions.lowerBound) * 8, count: positions.count * 8),
                             loops: loops)
        }
    }
}
