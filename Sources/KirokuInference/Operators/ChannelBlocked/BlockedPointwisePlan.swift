/// A pointwise convolution whose input and output are channel-blocked (NCHW8c, see
/// ChannelBlocks), through KirokuKernels' BlockedPointwise: 6 positions by 16 output channels at a
/// time, every store a whole vector; the work shared out by TileWork.
struct BlockedPointwisePlan: DirectMethod {
    let loops: ChannelBlockLoops
    let inChannels: Int, outChannels: Int, plane: Int
    /// Tiles of 6 and 5 positions covering the plane exactly (TransposedPointwisePlan.tiles), or,
    /// for the planes they cannot cover, of 6 with the last ending at the plane's end.
    let tiles: [(position: Int, count: Int)]
    /// Weights [pair of output blocks][input channel][16], zero past the last channel; bias per channel.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>

    var label: String { "blocked pointwise" }
    var readsChannelBlocks: Bool { true }
    var writesChannelBlocks: Bool { true }
    var addsResidual: Bool { true }
    var outBlocks: Int { outChannels / 8 }
    var pairs: Int { (outBlocks + 1) / 2 }

    /// A plan, or nil when `loops` has no channel-blocked kernels, the convolution is not a
    /// pointwise one between whole blocks of channels, or the plane is smaller than a tile of 6.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        let plane = window.output.h * window.output.w
        guard let blocked = loops.channelBlocks, groups == 1, window.kernel == (1, 1), window.stride == (1, 1),
              window.pads == (0, 0, 0, 0), inChannels % 8 == 0, outChannels % 8 == 0,
              plane >= Self.tilePositions else { return nil }
        self.loops = blocked
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.plane = plane
        tiles = Self.tiles(covering: plane)
        var packed = Tensor(zeros: [(outChannels + 15) / 16 * 16 * inChannels])
        for o in 0..<outChannels {
            for c in 0..<inChannels { packed.data[(o / 16 * inChannels + c) * 16 + o % 16] = weights.data[o * inChannels + c] }
        }
        self.weights = store(packed)
        self.bias = store(bias ?? Tensor(zeros: [outChannels]))
    }

    func scratchCount(threads: Int) -> Int { 0 }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        let bounds = activation?.bounds ?? -.infinity ... .infinity, after = activation?.bounds == nil ? activation : nil
        let work = TileWork(tiles: tiles.count, pairs: pairs, tileBytes: inChannels * 4 * Self.tilePositions, threads: context.threads,
                            granule: Self.granule(run: loops.pointwiseRun))
        tiles.withUnsafeBufferPointer { tiles in
            context.team.parallelFor(work.count) { index in
                let item = work.item(index)
                loops.pointwise(x, inChannels, plane, weights, bias, outBlocks, item.pairs, UnsafeBufferPointer(rebasing: tiles[item.tiles]),
                                bounds, added, y)
                if let after {
                    apply(after, to: y, plane: plane, blocks: 2 * item.pairs.lowerBound..<min(outBlocks, 2 * item.pairs.upperBound),
                          positions: Self.positions(tiles[item.tiles.lowerBound], tiles[item.tiles.upperBound - 1]), loops: context.loops)
                }
            }
        }
    }

    /// The positions tiles `first` to `last` cover (the last may overlap the one before).
    static func positions(_ first: (position: Int, count: Int), _ last: (position: Int, count: Int)) -> Range<Int> {
        first.position..<(last.position + last.count)
    }

    /// Positions of a full tile.
    static let tilePositions = 6

    /// Tiles of 6 a chunk's count is a multiple of for its span to be whole runs of `run`
    /// positions (4 for runs of 8; 1 where the kernel runs tile by tile): a span of 18 positions in
    /// runs of 8 computed 24 (PoolFormer's 14x14 projections from 1280 channels, 3 tiles to a chunk,
    /// took 1.27x ONNX Runtime's time).
    static func granule(run: Int) -> Int {
        guard run > 0 else { return 1 }
        var multiple = run
        while multiple % tilePositions != 0 { multiple += run }
        return multiple / tilePositions
    }

    /// Tiles of 6 and 5 positions covering `plane` exactly (TransposedPointwisePlan.tiles), or, for
    /// the planes they cannot cover, of 6 with the last ending at the plane's end.
    static func tiles(covering plane: Int) -> [(position: Int, count: Int)] {
        let size = tilePositions
        return TransposedPointwisePlan.tiles(covering: plane) ?? (0..<(plane + size - 1) / size).map { (min($0 * size, plane - size), size) }
    }
}

/// How a convolution into channel blocks, in tiles of positions by pairs of output blocks, is
/// shared out: chunks of consecutive tiles, as even as the tiles allow, whose input (about
/// `chunkBytes`) stays in cache while every pair runs over it, each chunk at least two tiles (a
/// last tile that overlaps the one before runs in the same chunk: no two threads write one
/// place) and a multiple of `granule` tiles but the last (a kernel's runs whole). Where those
/// chunks are too few to share between the threads, smaller chunks when the tiles suffice (each
/// thread then reads only its own positions: MobileNetV2's 14x14 projections 8-11% faster at 2
/// threads than with the pairs cut, where both threads read the whole input); otherwise the
/// pairs are cut too, as evenly as they allow (cut in chunks of the rounded-up share, RegNetX's
/// 42 pairs made 7 items for 2 threads, 4 for one and 3 for the other).
struct TileWork {
    let tiles: Int, pairs: Int
    let chunks: Int, pairChunks: Int
    /// Tiles per unit of the chunks (the last unit takes the tiles left over).
    let granule: Int
    /// Units to share out: whole granules of tiles.
    private let units: Int

    init(tiles: Int, pairs: Int, tileBytes: Int, threads: Int, granule: Int = 1) {
        (self.tiles, self.pairs, self.granule, units) = (tiles, pairs, granule, max(1, tiles / granule))
        let least = (2 + granule - 1) / granule
        let cached = max(least, Self.chunkBytes / max(tileBytes * granule, 1)), wanted = DirectConvolutionPlan.itemsPerThread * threads
        if threads > 1, units / cached < wanted, units >= (Self.tilesPerItem + granule - 1) / granule * wanted {
            (chunks, pairChunks) = (wanted, 1)
        } else {
            chunks = max(1, units / cached)
            pairChunks = threads == 1 ? 1 : max(1, min(pairs, (wanted + chunks - 1) / chunks))
        }
    }

    /// Work items.
    var count: Int { chunks * pairChunks }

    /// The tiles and pairs of item `index`.
    func item(_ index: Int) -> (tiles: Range<Int>, pairs: Range<Int>) {
        let (chunk, pairChunk) = (index / pairChunks, index % pairChunks)
        func tile(_ unit: Int) -> Int { unit == units ? tiles : unit * granule }
        return (tile(chunk * units / chunks)..<tile((chunk + 1) * units / chunks),
                pairChunk * pairs / pairChunks..<(pairChunk + 1) * pairs / pairChunks)
    }

    /// A chunk's input: it stays in the L2 cache while every pair of output blocks runs over it
    /// (measured on EfficientNet-Lite0, 1 thread: 96 KB 2-6% faster than 32 KB on most pointwise
    /// layers, 256 KB slower again).
    static let chunkBytes = 96 * 1024

    /// Tiles a chunk needs for the chunks alone to be shared between the threads: with fewer, the
    /// threads' shares differ by a tile too many (on MobileNetV2's 7x7 layers, 9 tiles in 8
    /// chunks, 8% slower at 2 threads). At least 2, as every chunk needs.
    static let tilesPerItem = 4
}
