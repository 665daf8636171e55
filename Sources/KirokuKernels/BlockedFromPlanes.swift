#if KIROKU_AVX2
/// A convolution from NCHW planes (an image's few channels, as zero-padded copies) to
/// channel-blocked output (ChannelBlocks): a chain of channel-blocked convolutions that starts at
/// a network's stem then needs no move of the stem's output. A tile is 6 (or 5) positions by 2
/// output blocks, as in BlockedPointwise; each input value is broadcast from wherever its
/// position's window lies, so any kernel size and stride.
public enum BlockedFromPlanes {
    /// For each pair q in `pairs` (output blocks 2q and 2q + 1, or 2q alone when it is the last of
    /// `outBlocks`) and each tile of `tiles` (5 or 6 positions; a tile may overlap the one before):
    /// output[b][p][j] = clamp(bias[8b + j] + the sum over channels c and taps t of
    /// weights[q][c][t][8 * (b - 2q) + j] * padded[c * channelStride + sources[p] + tapOffsets[t]]),
    /// the output's planes `plane` positions long, `weights` [pair][channel][tap][16] (zero in a
    /// lone block's second half), `bias` [8 * outBlocks], clamped to `bounds`.
    public static func run(padded: UnsafePointer<Float>, channelStride: Int, channels: Int, sources: UnsafePointer<Int>,
                           tapOffsets: UnsafeBufferPointer<Int>, plane: Int, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                           outBlocks: Int, pairs: Range<Int>, tiles: UnsafeBufferPointer<(position: Int, count: Int)>,
                           bounds: ClosedRange<Float>, output: UnsafeMutablePointer<Float>) {
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        let blockFloats = plane &* 8
        for q in pairs {
            let first = 2 &* q, lone = first &+ 1 == outBlocks
            let pairWeights = weights + q &* channels &* tapOffsets.count &* 16
            let firstBias = UnsafeRawPointer(bias + first &* 8).loadUnaligned(as: Vector.self)
            let secondBias = lone ? Vector() : UnsafeRawPointer(bias + (first &* 8 &+ 8)).loadUnaligned(as: Vector.self)
            for tile in tiles {
                var sums = TileSums(firstBias, secondBias)
                let starts = sources + tile.position
                if tile.count == 6 {
                    sums.accumulatePair(planes: padded, channelStride: channelStride, channels: channels, starts: starts, tapOffsets: tapOffsets,
                                        weights: pairWeights, positions: 6)
                } else {
                    sums.accumulatePair(planes: padded, channelStride: channelStride, channels: channels, starts: starts, tapOffsets: tapOffsets,
                                        weights: pairWeights, positions: 5)
                }
                sums.forEach(count: 2 &* tile.count) { index, sum in
                    guard !lone || index & 1 == 0 else { return }
                    storeClamped(sum, at: (first &+ index & 1) &* blockFloats &+ (tile.position &+ index &>> 1) &* 8, output: output,
                                 residual: nil, low: low, high: high)
                }
            }
        }
    }
}
#endif
