#if KIROKU_AVX2
/// A convolution of any window (kernel size, stride, dilation) into channel-blocked output
/// (ChannelBlocks), from zero-padded copies of its input: NCHW planes (a network's stem, whose
/// few channels then need no move into blocks) or channel blocks (InceptionV3's 3x3, 5x5, 1x7
/// and 7x1 layers between Concats). A tile is 6 (or 5) positions by 2 output blocks, as in
/// BlockedPointwise; each input value is broadcast from wherever its position's window lies, so
/// a tile may span rows.
public enum BlockedConvolution {
    /// For each pair q in `pairs` (output blocks 2q and 2q + 1, or 2q alone when it is the last of
    /// `outBlocks`) and each tile of `tiles` (5 or 6 positions; a tile may overlap the one before):
    /// output[b][p][j] = clamp(bias[8b + j] + the sum over input channels c and the tile's taps t
    /// (those any of its positions reads inside the input: the rest would add only padding's zeros) of
    /// weights[q][c / lanes][t][c % lanes][8 * (b - 2q) + j] * padded[(c / lanes) * groupStride + sources[p] + tapOffsets[t] + c % lanes]),
    /// the input's channels in `groups` groups of `lanes` (1: planes `groupStride` apart; 8:
    /// blocks, whose lanes are consecutive floats), the output's planes `plane` positions long,
    /// `weights` zero in a lone block's second half, `bias` [8 * outBlocks], clamped to `bounds`.
    public static func run(padded: UnsafePointer<Float>, groupStride: Int, groups: Int, lanes: Int, sources: UnsafePointer<Int>,
                           tapOffsets: UnsafeBufferPointer<Int>, plane: Int, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                           outBlocks: Int, pairs: Range<Int>, tiles: UnsafeBufferPointer<(position: Int, count: Int, taps: Range<Int>)>,
                           bounds: ClosedRange<Float>, output: UnsafeMutablePointer<Float>) {
        let (low, high) = (BlockVector(repeating: bounds.lowerBound), BlockVector(repeating: bounds.upperBound))
        let blockFloats = plane &* 8, groupFloats = lanes &* tapOffsets.count &* 16
        var done = pairs.lowerBound  // pairs before it computed (the AVX-512 build takes two at once)
        for q in pairs where q >= done {
            done = q &+ 1
            let first = 2 &* q, lone = first &+ 1 == outBlocks
            let pairWeights = weights + q &* groups &* groupFloats
            let firstBias = UnsafeRawPointer(bias + first &* 8).loadUnaligned(as: BlockVector.self)
            let secondBias = lone ? BlockVector() : UnsafeRawPointer(bias + (first &* 8 &+ 8)).loadUnaligned(as: BlockVector.self)
            let store = { (sums: PairSums, block: Int, tile: (position: Int, count: Int, taps: Range<Int>), both: Bool) in
                sums.forEach(count: tile.count) { j, sum in
                    let at = block &* blockFloats &+ (tile.position &+ j) &* 8
                    storeClamped(sum.low, at: at, output: output, residual: nil, low: low, high: high)
                    if both { storeClamped(sum.high, at: at &+ blockFloats, output: output, residual: nil, low: low, high: high) }
                }
            }
            #if KIROKU_AVX512
            // With the next pair where it is whole: 12 sums, each input value loaded once for both.
            if q &+ 1 < pairs.upperBound, first &+ 3 < outBlocks {
                let nextWeights = pairWeights + groups &* groupFloats, nextBias = UnsafeRawPointer(bias + (first &* 8 &+ 16)).loadSixteen()
                for tile in tiles {
                    var sums = PairSums(Sixteen(lowHalf: firstBias, highHalf: secondBias)), next = PairSums(nextBias)
                    let starts = sources + tile.position, skip = tile.taps.lowerBound &* lanes &* 16
                    let taps = UnsafeBufferPointer(rebasing: tapOffsets[tile.taps])
                    withConstants(lanes: lanes, count: tile.count) { lanes, positions in
                        sums.accumulate(padded: padded, groupStride: groupStride, groups: groups, lanes: lanes, starts: starts, tapOffsets: taps,
                                        weights: pairWeights + skip, alongside: &next, otherWeights: nextWeights + skip, groupFloats: groupFloats,
                                        positions: positions)
                    }
                    store(sums, first, tile, true)
                    store(next, first &+ 2, tile, true)
                }
                done = q &+ 2
                continue
            }
            #endif
            for tile in tiles {
                var sums = PairSums(Sixteen(lowHalf: firstBias, highHalf: secondBias))
                let starts = sources + tile.position, tapWeights = pairWeights + tile.taps.lowerBound &* lanes &* 16
                let taps = UnsafeBufferPointer(rebasing: tapOffsets[tile.taps])
                withConstants(lanes: lanes, count: tile.count) { lanes, positions in
                    sums.accumulate(padded: padded, groupStride: groupStride, groups: groups, lanes: lanes, starts: starts, tapOffsets: taps,
                                    weights: tapWeights, groupFloats: groupFloats, positions: positions)
                }
                store(sums, first, tile, !lone)
            }
        }
    }

    /// Calls body(lanes, positions) with `lanes` (1 or 8) and `count` (5 or 6) as constants, so
    /// that each case's loop is compiled for its own.
    @inline(__always)
    private static func withConstants(lanes: Int, count: Int, _ body: (Int, Int) -> Void) {
        switch (lanes, count) {
        case (8, 6): body(8, 6)
        case (8, _): body(8, 5)
        case (_, 6): body(1, 6)
        default: body(1, 5)
        }
    }
}
#endif
