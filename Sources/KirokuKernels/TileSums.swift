#if KIROKU_AVX2
/// The 12 sums of a tile over channel-blocked output (BlockedPointwise, BlockedConvolution): for a
/// pair of output blocks, s(2j) and s(2j + 1) the two blocks at position j; for a lone block, s(j)
/// position j.
struct TileSums {
    var s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11: Vector

    /// Sums starting from the bias: `even` in the even ones, `odd` in the odd ones.
    @inline(__always)
    init(_ even: Vector, _ odd: Vector) {
        (s0, s2, s4, s6, s8, s10) = (even, even, even, even, even, even)
        (s1, s3, s5, s7, s9, s11) = (odd, odd, odd, odd, odd, odd)
    }

    /// Two blocks by `positions` (5 or 6, a constant where inlined) positions from `x` (block 0
    /// of the input at the tile's first position).
    @inline(__always)
    mutating func accumulatePair(_ x: UnsafePointer<Float>, channels: Int, blockFloats: Int, weights: UnsafePointer<Float>,
                                 positions: Int) {
        var x = x, w = UnsafeRawPointer(weights)
        for _ in 0..<channels &>> 3 {
            for lane in 0..<8 {
                let w0 = w.loadUnaligned(as: Vector.self), w1 = w.loadUnaligned(fromByteOffset: 32, as: Vector.self)
                var v = Vector(repeating: x[lane])
                s0 = multiplyAdd(s0, v, w0); s1 = multiplyAdd(s1, v, w1)
                v = Vector(repeating: x[8 &+ lane])
                s2 = multiplyAdd(s2, v, w0); s3 = multiplyAdd(s3, v, w1)
                v = Vector(repeating: x[16 &+ lane])
                s4 = multiplyAdd(s4, v, w0); s5 = multiplyAdd(s5, v, w1)
                v = Vector(repeating: x[24 &+ lane])
                s6 = multiplyAdd(s6, v, w0); s7 = multiplyAdd(s7, v, w1)
                v = Vector(repeating: x[32 &+ lane])
                s8 = multiplyAdd(s8, v, w0); s9 = multiplyAdd(s9, v, w1)
                if positions > 5 {
                    v = Vector(repeating: x[40 &+ lane])
                    s10 = multiplyAdd(s10, v, w0); s11 = multiplyAdd(s11, v, w1)
                }
                w += 64
            }
            x += blockFloats
        }
    }

    /// One block by `positions` (5, 6 or 12, a constant where inlined) positions.
    @inline(__always)
    mutating func accumulateSingle(_ x: UnsafePointer<Float>, channels: Int, blockFloats: Int, weights: UnsafePointer<Float>,
                                   positions: Int) {
        var x = x, w = UnsafeRawPointer(weights)
        for _ in 0..<channels &>> 3 {
            for lane in 0..<8 {
                let w0 = w.loadUnaligned(as: Vector.self)
                s0 = multiplyAdd(s0, Vector(repeating: x[lane]), w0)
                s1 = multiplyAdd(s1, Vector(repeating: x[8 &+ lane]), w0)
                s2 = multiplyAdd(s2, Vector(repeating: x[16 &+ lane]), w0)
                s3 = multiplyAdd(s3, Vector(repeating: x[24 &+ lane]), w0)
                s4 = multiplyAdd(s4, Vector(repeating: x[32 &+ lane]), w0)
                if positions > 5 { s5 = multiplyAdd(s5, Vector(repeating: x[40 &+ lane]), w0) }
                if positions > 6 {
                    s6 = multiplyAdd(s6, Vector(repeating: x[48 &+ lane]), w0)
                    s7 = multiplyAdd(s7, Vector(repeating: x[56 &+ lane]), w0)
                    s8 = multiplyAdd(s8, Vector(repeating: x[64 &+ lane]), w0)
                    s9 = multiplyAdd(s9, Vector(repeating: x[72 &+ lane]), w0)
                    s10 = multiplyAdd(s10, Vector(repeating: x[80 &+ lane]), w0)
                    s11 = multiplyAdd(s11, Vector(repeating: x[88 &+ lane]), w0)
                }
                w += 64
            }
            x += blockFloats
        }
    }

    /// Calls `body(index, sum)` for the first `count` (5, 6, 10 or 12) sums.
    @inline(__always)
    func forEach(count: Int, _ body: (Int, Vector) -> Void) {
        body(0, s0); body(1, s1); body(2, s2); body(3, s3); body(4, s4)
        if count > 5 { body(5, s5) }
        guard count > 6 else { return }
        body(6, s6); body(7, s7); body(8, s8); body(9, s9)
        if count > 10 { body(10, s10); body(11, s11) }
    }

    /// Two blocks by `positions` (5 or 6, a constant where inlined) positions from padded input
    /// whose channels come in `groups` groups of `lanes` (1 or 8, a constant where inlined)
    /// consecutive floats, `groupStride` floats apart from `padded`: for each group, each tap and
    /// each lane, the tile's inputs at starts[j] + tapOffsets[t] + lane times the 16 weights
    /// (weights [group][tap][lane][16], each group's `groupFloats` from the one before, its taps
    /// read front to back from the first of `tapOffsets`).
    @inline(__always)
    mutating func accumulatePair(padded x: UnsafePointer<Float>, groupStride: Int, groups: Int, lanes: Int, starts: UnsafePointer<Int>,
                                 tapOffsets: UnsafeBufferPointer<Int>, weights: UnsafePointer<Float>, groupFloats: Int, positions: Int) {
        var x = x, group = UnsafeRawPointer(weights)
        let (p0, p1, p2, p3, p4, p5) = (starts[0], starts[1], starts[2], starts[3], starts[4], positions > 5 ? starts[5] : 0)
        for _ in 0..<groups {
            var w = group
            group += groupFloats &* 4
            for offset in tapOffsets {
                for lane in 0..<lanes {
                    let w0 = w.loadUnaligned(as: Vector.self), w1 = w.loadUnaligned(fromByteOffset: 32, as: Vector.self)
                    let tap = x + (offset &+ lane)
                    var v = Vector(repeating: tap[p0])
                    s0 = multiplyAdd(s0, v, w0); s1 = multiplyAdd(s1, v, w1)
                    v = Vector(repeating: tap[p1])
                    s2 = multiplyAdd(s2, v, w0); s3 = multiplyAdd(s3, v, w1)
                    v = Vector(repeating: tap[p2])
                    s4 = multiplyAdd(s4, v, w0); s5 = multiplyAdd(s5, v, w1)
                    v = Vector(repeating: tap[p3])
                    s6 = multiplyAdd(s6, v, w0); s7 = multiplyAdd(s7, v, w1)
                    v = Vector(repeating: tap[p4])
                    s8 = multiplyAdd(s8, v, w0); s9 = multiplyAdd(s9, v, w1)
                    if positions > 5 {
                        v = Vector(repeating: tap[p5])
                        s10 = multiplyAdd(s10, v, w0); s11 = multiplyAdd(s11, v, w1)
                    }
                    w += 64
                }
            }
            x += groupStride
        }
    }
}

/// Stores a finished vector of 8 channels at output + offset, plus the residual's at the same
/// place if given, clamped to low...high (a fused Relu or Clip).
@inline(__always)
func storeClamped(_ sum: Vector, at offset: Int, output: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, low: Vector, high: Vector) {
    var value = sum
    if let residual { value += UnsafeRawPointer(residual + offset).loadUnaligned(as: Vector.self) }
    value.replace(with: low, where: value .< low)
    value.replace(with: high, where: value .> high)
    UnsafeMutableRawPointer(output + offset).storeBytes(of: value, as: Vector.self)
}
#endif
