#if KIROKU_AVX2
/// A depthwise convolution over 8 channels at once, one channel in each vector lane: every output
/// position is one full vector whatever the plane's width, where DepthwiseChannel, vectorised along
/// a row, wastes lanes and stores lane by lane on small planes. The 8 channels' planes are
/// interleaved into a zero-padded buffer (8 floats per position) and the sums transposed back to
/// planes as they are stored, 8 positions at a time through an 8x8 transpose. Only in the AVX2
/// build: the 8 sums and the transpose need 16 registers of 8 floats.
public enum DepthwiseLanes {
    /// Interleaves `count` (at most 8) channels' planes of `positions.count` floats, channel c at
    /// planes + c * planeStride, into `padded`: the value at plane position p of channel c goes to
    /// padded[positions[p] + c]; lanes from `count` on are zero. The plane must hold at least 8
    /// positions (its last 8 are taken together, overlapping the previous 8 if need be).
    public static func interleave(_ planes: UnsafePointer<Float>, planeStride: Int, count: Int,
                                  positions: UnsafeBufferPointer<Int>, into padded: UnsafeMutablePointer<Float>) {
        let target = UnsafeMutableRawPointer(padded), plane = positions.count
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 16) { rows in
            var p = 0
            while p < plane {
                let first = min(p, plane &- 8)
                for c in 0..<8 {
                    rows[c] = c < count ? UnsafeRawPointer(planes + c &* planeStride + first).loadUnaligned(as: Vector.self) : .zero
                }
                let lanes = transpose8x8(rows.baseAddress!)
                for j in 0..<8 { target.storeBytes(of: lanes[j], toByteOffset: positions[first &+ j] &* 4, as: Vector.self) }
                p &+= 8
            }
        }
    }

    /// For each output position p in 0..<sources.count (at least 8), 8 at a time: the channels'
    /// sums bias + the sum over taps t of filter[8t ..< 8t + 8] * padded[sources[p] + tapOffsets[t] ..< +8],
    /// clamped to `bounds` (a fused Relu or Clip; -inf...inf for none), stored for the first
    /// `count` channels at output[c * outputStride + p].
    public static func accumulate(_ padded: UnsafePointer<Float>, tapOffsets: UnsafeBufferPointer<Int>,
                                  sources: UnsafeBufferPointer<Int>, filter: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                  bounds: ClosedRange<Float>, count: Int, output: UnsafeMutablePointer<Float>, outputStride: Int) {
        let base = UnsafeRawPointer(padded), weights = UnsafeRawPointer(filter), plane = sources.count
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        let start = UnsafeRawPointer(bias).loadUnaligned(as: Vector.self)
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 16) { sums in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: 8) { starts in
                var p = 0
                while p < plane {
                    let first = min(p, plane &- 8)
                    for s in 0..<8 {
                        starts[s] = sources[first &+ s] &* 4
                        sums[s] = start
                    }
                    for tap in 0..<tapOffsets.count {
                        let w = weights.loadUnaligned(fromByteOffset: tap &* 32, as: Vector.self), offset = tapOffsets[tap] &* 4
                        for s in 0..<8 {
                            sums[s] = multiplyAdd(sums[s], w, base.loadUnaligned(fromByteOffset: starts[s] &+ offset, as: Vector.self))
                        }
                    }
                    for s in 0..<8 {
                        sums[s].replace(with: low, where: sums[s] .< low)
                        sums[s].replace(with: high, where: sums[s] .> high)
                    }
                    let rows = transpose8x8(sums.baseAddress!)
                    for c in 0..<count {
                        UnsafeMutableRawPointer(output + c &* outputStride + first).storeBytes(of: rows[c], as: Vector.self)
                    }
                    p &+= 8
                }
            }
        }
    }
}
#endif
