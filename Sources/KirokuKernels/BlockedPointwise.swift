#if KIROKU_AVX2
/// A pointwise (1x1) convolution over channel-blocked data (ChannelBlocks): a tile is 6 positions
/// by 2 blocks of output channels, 12 vector sums kept in registers while every input channel adds
/// 6 broadcasts of its values at the tile's positions times 2 vectors of weights (tiles of 5 where
/// they cover a plane exactly: 49 = 4 x 6 + 5 x 5). A last block without a pair takes two tiles at
/// once where it can. Every store is a whole vector, 8 output channels of one position, next to
/// the last: no scattered stores and no packing of the input. Only in the AVX2 build: the 12 sums
/// need its 16 registers.
public enum BlockedPointwise {
    /// For each pair q in `pairs` (output blocks 2q and 2q + 1, or 2q alone when it is the last of
    /// `outBlocks`) and each position p of `tiles` (5 or 6 consecutive positions each, in order;
    /// a tile may overlap the one before it, which then recomputes the same values):
    /// output[b][p][j] = clamp(bias[8b + j] + residual[b][p][j] (if given)
    ///                         + the sum over input channels c of weights[q][c][8 * (b - 2q) + j] * input[c / 8][p][c % 8]),
    /// the blocked arrays' planes `plane` positions long, `weights` [pair][input channel][16]
    /// (zero in a lone block's second half), `bias` [8 * outBlocks], clamped to `bounds` (a fused
    /// Relu or Clip; -inf...inf for none). `channels` is a multiple of 8. A lone block takes two
    /// adjacent tiles of 6 at once where it can (12 sums, as a pair's tile has).
    public static func run(input: UnsafePointer<Float>, channels: Int, plane: Int, weights: UnsafePointer<Float>,
                           bias: UnsafePointer<Float>, outBlocks: Int, pairs: Range<Int>, tiles: UnsafeBufferPointer<(position: Int, count: Int)>,
                           bounds: ClosedRange<Float>, residual: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>) {
        let (low, high) = (BlockVector(repeating: bounds.lowerBound), BlockVector(repeating: bounds.upperBound))
        let blockFloats = plane &* 8
        for q in pairs {
            let first = 2 &* q, pairWeights = weights + q &* channels &* 16
            let store = { (sum: BlockVector, block: Int, position: Int) in
                storeClamped(sum, at: block &* blockFloats &+ position &* 8, output: output, residual: residual, low: low, high: high)
            }
            if first &+ 1 < outBlocks {
                let pairBias = UnsafeRawPointer(bias + first &* 8).loadSixteen()
                for tile in tiles {
                    var sums = PairSums(pairBias)
                    let x = input + tile.position &* 8
                    if tile.count == 6 {
                        sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 6)
                    } else {
                        sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 5)
                    }
                    sums.forEach(count: tile.count) { j, sum in
                        store(sum.low, first, tile.position &+ j)
                        store(sum.high, first &+ 1, tile.position &+ j)
                    }
                }
            } else {
                let blockBias = UnsafeRawPointer(bias + first &* 8).loadUnaligned(as: BlockVector.self)
                var t = 0
                while t < tiles.count {
                    let tile = tiles[t], x = input + tile.position &* 8
                    var sums = TileSums(blockBias), count = tile.count
                    if tile.count == 6, t &+ 1 < tiles.count, tiles[t &+ 1] == (tile.position &+ 6, 6) {
                        sums.accumulateSingle(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 12)
                        (count, t) = (12, t &+ 1)
                    } else if tile.count == 6 {
                        sums.accumulateSingle(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 6)
                    } else {
                        sums.accumulateSingle(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 5)
                    }
                    sums.forEach(count: count) { index, sum in store(sum, first, tile.position &+ index) }
                    t &+= 1
                }
            }
        }
    }
}
#endif
