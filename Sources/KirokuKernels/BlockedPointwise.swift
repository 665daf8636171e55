#if KIROKU_AVX2
/// A pointwise (1x1) convolution over channel-blocked data (ChannelBlocks): a tile is 6 positions
/// by 2 blocks of output channels, 12 vector sums kept in registers while every input channel adds
/// 6 broadcasts of its values at the tile's positions times 2 vectors of weights (tiles of 5 where
/// they cover a plane exactly: 49 = 4 x 6 + 5 x 5). A last block without a pair takes two tiles at
/// once where it can. Every store is a whole vector, 8 output channels of one position, next to
/// the last: no scattered stores and no packing of the input. Only in the AVX2 builds: the 12 sums
/// need their 16 registers. In the AVX-512 build a pair's tile is a run of 5 to 8 positions, each
/// one register of 16 channels, over the span of the tiles given.
public enum BlockedPointwise {
    #if KIROKU_AVX512
    /// Positions a pair's longest run computes at once over the span of the tiles given (0: tile
    /// by tile); shorter runs cut the rest exactly (`run(left:)`).
    public static let spanRun = 8

    /// Positions of the next run with `left` positions of a span left: 8 where what remains after
    /// it can be cut exactly into runs of 5 to 8, else the longest shorter run that leaves such a
    /// remainder (17: 7, then 5 and 5); with 9 left, 5 and then a run of 5 overlapping it; with
    /// fewer than 5 left (a span shorter than 5), 5 ending at the span's end.
    @inline(__always)
    public static func run(left: Int) -> Int {
        guard left > 8 else { return max(left, 5) }
        func exact(_ n: Int) -> Bool { n >= 10 || (5...8).contains(n) }
        var count = 8
        while count > 5 && !exact(left &- count) { count &-= 1 }
        return count
    }
    #else
    /// Positions a pair's run computes at once over the span of the tiles given (0: tile by tile).
    public static let spanRun = 0
    #endif

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
        var done = pairs.lowerBound  // pairs before it computed (the AVX-512 build takes two at once)
        for q in pairs where q >= done {
            done = q &+ 1
            let first = 2 &* q, pairWeights = weights + q &* channels &* 16
            let store = { (sum: BlockVector, block: Int, position: Int) in
                storeClamped(sum, at: block &* blockFloats &+ position &* 8, output: output, residual: residual, low: low, high: high)
            }
            if first &+ 1 < outBlocks {
                let pairBias = UnsafeRawPointer(bias + first &* 8).loadSixteen()
                #if KIROKU_AVX512
                // Runs of 5 to 8 positions over the tiles' span instead (up to 8 sums of 16 lanes:
                // the multiply-add's latency covered), as long as `run(left:)` says: every span of
                // 10 or more positions exactly (a 7x7 plane 8, 8, 8, 8, 7, 5, 5: 49 positions, not
                // the 53 of runs of 8 and a last one overlapping the one before).
                let span = tiles[0].position..<(tiles[tiles.count &- 1].position &+ tiles[tiles.count &- 1].count)
                if span.count >= 8 {
                    // With the next pair where it is whole: 16 sums, each input value loaded once for both.
                    let double = q &+ 1 < pairs.upperBound && first &+ 3 < outBlocks
                    let nextBias = double ? UnsafeRawPointer(bias + (first &* 8 &+ 16)).loadSixteen() : pairBias
                    var start = span.lowerBound
                    while start < span.upperBound {
                        let count = run(left: span.upperBound &- start)
                        let position = min(start, span.upperBound &- count), x = input + position &* 8
                        start = position &+ count
                        var sums = PairSums(pairBias)
                        if double {
                            var next = PairSums(nextBias)
                            let otherWeights = pairWeights + channels &* 16
                            switch count {
                            case 8: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, alongside: &next,
                                                    otherWeights: otherWeights, positions: 8)
                            case 7: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, alongside: &next,
                                                    otherWeights: otherWeights, positions: 7)
                            case 6: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, alongside: &next,
                                                    otherWeights: otherWeights, positions: 6)
                            default: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, alongside: &next,
                                                     otherWeights: otherWeights, positions: 5)
                            }
                            next.forEach(count: count) { j, sum in
                                store(sum.low, first &+ 2, position &+ j)
                                store(sum.high, first &+ 3, position &+ j)
                            }
                        } else {
                            switch count {
                            case 8: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 8)
                            case 7: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 7)
                            case 6: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 6)
                            default: sums.accumulate(x, channels: channels, blockFloats: blockFloats, weights: pairWeights, positions: 5)
                            }
                        }
                        sums.forEach(count: count) { j, sum in
                            store(sum.low, first, position &+ j)
                            store(sum.high, first &+ 1, position &+ j)
                        }
                    }
                    done = double ? q &+ 2 : q &+ 1
                    continue
                }
                #endif
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
