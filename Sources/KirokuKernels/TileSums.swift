#if KIROKU_AVX2
/// The sums of a tile over a pair of output blocks (BlockedPointwise, BlockedConvolution): p_j
/// position j's 16 channels, the pair's first block in the low half and its second in the high.
/// Six positions in the AVX2 build (12 registers), eight in the AVX-512 build (8).
struct PairSums {
    var p0, p1, p2, p3, p4, p5: Sixteen
    #if KIROKU_AVX512
    var p6, p7: Sixteen
    #endif

    /// Sums starting from the pair's 16 biases.
    @inline(__always)
    init(_ bias: Sixteen) {
        (p0, p1, p2, p3, p4, p5) = (bias, bias, bias, bias, bias, bias)
        #if KIROKU_AVX512
        (p6, p7) = (bias, bias)
        #endif
    }

    /// `positions` (5 or 6, or 7 or 8 in the AVX-512 build; a constant where inlined) consecutive
    /// positions from `x` (block 0 of the input at the tile's first position), weights [input channel][16].
    @inline(__always)
    mutating func accumulate(_ x: UnsafePointer<Float>, channels: Int, blockFloats: Int, weights: UnsafePointer<Float>, positions: Int) {
        var x = x, w = UnsafeRawPointer(weights)
        for _ in 0..<channels &>> 3 {
            for lane in 0..<8 {
                add(w.loadSixteen(), at: x + lane, starts: (0, 8, 16, 24, 32, 40, 48, 56), positions: positions)
                w += 64
            }
            x += blockFloats
        }
    }

    #if KIROKU_AVX512
    /// `positions` (5 to 8; a constant where inlined) consecutive positions from `x` for two
    /// pairs at once, these sums with `weights` and `other` with `otherWeights` (up to 16 sums:
    /// each input value loaded once for both).
    @inline(__always)
    mutating func accumulate(_ x: UnsafePointer<Float>, channels: Int, blockFloats: Int, weights: UnsafePointer<Float>,
                             alongside other: inout PairSums, otherWeights: UnsafePointer<Float>, positions: Int) {
        var x = x, w = UnsafeRawPointer(weights), v = UnsafeRawPointer(otherWeights)
        let at = (0, 8, 16, 24, 32, 40, 48, 56)
        for _ in 0..<channels &>> 3 {
            for lane in 0..<8 {
                add(w.loadSixteen(), at: x + lane, starts: at, positions: positions)
                other.add(v.loadSixteen(), at: x + lane, starts: at, positions: positions)
                w += 64
                v += 64
            }
            x += blockFloats
        }
    }
    #endif

    /// `positions` (5 or 6, a constant where inlined) positions from padded input whose channels
    /// come in `groups` groups of `lanes` (1 or 8, a constant where inlined) consecutive floats,
    /// `groupStride` floats apart from `padded`: for each group, each tap and each lane, the tile's
    /// inputs at starts[j] + tapOffsets[t] + lane times the 16 weights (weights
    /// [group][tap][lane][16], each group's `groupFloats` from the one before, its taps read front
    /// to back from the first of `tapOffsets`).
    @inline(__always)
    mutating func accumulate(padded x: UnsafePointer<Float>, groupStride: Int, groups: Int, lanes: Int, starts: UnsafePointer<Int>,
                             tapOffsets: UnsafeBufferPointer<Int>, weights: UnsafePointer<Float>, groupFloats: Int, positions: Int) {
        let at = (starts[0], starts[1], starts[2], starts[3], starts[4], positions > 5 ? starts[5] : 0, 0, 0), w = UnsafeRawPointer(weights)
        Self.forEachStep(padded: x, groupStride: groupStride, groups: groups, lanes: lanes, tapOffsets: tapOffsets,
                         groupFloats: groupFloats) { offset, input in
            add(w.loadSixteen(fromByteOffset: offset), at: input, starts: at, positions: positions)
        }
    }

    /// Calls step(the step's weights' byte offset, its inputs) for each group, tap and lane of a
    /// padded tile, in the weights' order (see `accumulate(padded:...)`).
    @inline(__always)
    private static func forEachStep(padded x: UnsafePointer<Float>, groupStride: Int, groups: Int, lanes: Int,
                                    tapOffsets: UnsafeBufferPointer<Int>, groupFloats: Int, _ step: (Int, UnsafePointer<Float>) -> Void) {
        var x = x, group = 0
        for _ in 0..<groups {
            var w = group
            group &+= groupFloats &* 4
            for offset in tapOffsets {
                for lane in 0..<lanes {
                    step(w, x + (offset &+ lane))
                    w &+= 64
                }
            }
            x += groupStride
        }
    }

    #if KIROKU_AVX512
    /// The same for two pairs at once, these sums with `weights` and `other` with `otherWeights`
    /// (laid out as `weights`; 12 sums: each input value loaded once for both).
    @inline(__always)
    mutating func accumulate(padded x: UnsafePointer<Float>, groupStride: Int, groups: Int, lanes: Int, starts: UnsafePointer<Int>,
                             tapOffsets: UnsafeBufferPointer<Int>, weights: UnsafePointer<Float>, alongside other: inout PairSums,
                             otherWeights: UnsafePointer<Float>, groupFloats: Int, positions: Int) {
        let at = (starts[0], starts[1], starts[2], starts[3], starts[4], positions > 5 ? starts[5] : 0, 0, 0)
        let (w, v) = (UnsafeRawPointer(weights), UnsafeRawPointer(otherWeights))
        Self.forEachStep(padded: x, groupStride: groupStride, groups: groups, lanes: lanes, tapOffsets: tapOffsets,
                         groupFloats: groupFloats) { offset, input in
            add(w.loadSixteen(fromByteOffset: offset), at: input, starts: at, positions: positions)
            other.add(v.loadSixteen(fromByteOffset: offset), at: input, starts: at, positions: positions)
        }
    }
    #endif

    /// One step: the floats at x[starts.j] for the first `positions` positions, each times `weights`.
    @inline(__always)
    private mutating func add(_ weights: Sixteen, at x: UnsafePointer<Float>, starts: (Int, Int, Int, Int, Int, Int, Int, Int), positions: Int) {
        p0 = multiplyAdd(p0, x[starts.0], weights)
        p1 = multiplyAdd(p1, x[starts.1], weights)
        p2 = multiplyAdd(p2, x[starts.2], weights)
        p3 = multiplyAdd(p3, x[starts.3], weights)
        p4 = multiplyAdd(p4, x[starts.4], weights)
        if positions > 5 { p5 = multiplyAdd(p5, x[starts.5], weights) }
        #if KIROKU_AVX512
        if positions > 6 { p6 = multiplyAdd(p6, x[starts.6], weights) }
        if positions > 7 { p7 = multiplyAdd(p7, x[starts.7], weights) }
        #endif
    }

    /// Calls body(j, p_j) for the first `count` (5 or 6, or 7 or 8 in the AVX-512 build) positions.
    @inline(__always)
    func forEach(count: Int, _ body: (Int, Sixteen) -> Void) {
        body(0, p0); body(1, p1); body(2, p2); body(3, p3); body(4, p4)
        if count > 5 { body(5, p5) }
        #if KIROKU_AVX512
        if count > 6 { body(6, p6) }
        if count > 7 { body(7, p7) }
        #endif
    }
}

/// The 12 sums of a tile over one output block (BlockedPointwise's lone last block): s(j) position j.
struct TileSums {
    var s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11: BlockVector

    /// Sums starting from the block's biases.
    @inline(__always)
    init(_ bias: BlockVector) {
        (s0, s1, s2, s3, s4, s5) = (bias, bias, bias, bias, bias, bias)
        (s6, s7, s8, s9, s10, s11) = (bias, bias, bias, bias, bias, bias)
    }

    /// One block by `positions` (5, 6 or 12, a constant where inlined) positions.
    @inline(__always)
    mutating func accumulateSingle(_ x: UnsafePointer<Float>, channels: Int, blockFloats: Int, weights: UnsafePointer<Float>,
                                   positions: Int) {
        var x = x, w = UnsafeRawPointer(weights)
        for _ in 0..<channels &>> 3 {
            for lane in 0..<8 {
                let w0 = w.loadUnaligned(as: BlockVector.self)
                s0 = multiplyAdd(s0, BlockVector(repeating: x[lane]), w0)
                s1 = multiplyAdd(s1, BlockVector(repeating: x[8 &+ lane]), w0)
                s2 = multiplyAdd(s2, BlockVector(repeating: x[16 &+ lane]), w0)
                s3 = multiplyAdd(s3, BlockVector(repeating: x[24 &+ lane]), w0)
                s4 = multiplyAdd(s4, BlockVector(repeating: x[32 &+ lane]), w0)
                if positions > 5 { s5 = multiplyAdd(s5, BlockVector(repeating: x[40 &+ lane]), w0) }
                if positions > 6 {
                    s6 = multiplyAdd(s6, BlockVector(repeating: x[48 &+ lane]), w0)
                    s7 = multiplyAdd(s7, BlockVector(repeating: x[56 &+ lane]), w0)
                    s8 = multiplyAdd(s8, BlockVector(repeating: x[64 &+ lane]), w0)
                    s9 = multiplyAdd(s9, BlockVector(repeating: x[72 &+ lane]), w0)
                    s10 = multiplyAdd(s10, BlockVector(repeating: x[80 &+ lane]), w0)
                    s11 = multiplyAdd(s11, BlockVector(repeating: x[88 &+ lane]), w0)
                }
                w += 64
            }
            x += blockFloats
        }
    }

    /// Calls `body(index, sum)` for the first `count` (5, 6 or 12) sums.
    @inline(__always)
    func forEach(count: Int, _ body: (Int, BlockVector) -> Void) {
        body(0, s0); body(1, s1); body(2, s2); body(3, s3); body(4, s4)
        if count > 5 { body(5, s5) }
        guard count > 6 else { return }
        body(6, s6); body(7, s7); body(8, s8); body(9, s9); body(10, s10); body(11, s11)
    }
}

/// Stores a finished vector of 8 channels at output + offset, plus the residual's at the same
/// place if given, clamped to low...high (a fused Relu or Clip).
@inline(__always)
func storeClamped(_ sum: BlockVector, at offset: Int, output: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, low: BlockVector, high: BlockVector) {
    var value = sum
    if let residual { value += UnsafeRawPointer(residual + offset).loadUnaligned(as: BlockVector.self) }
    value.replace(with: low, where: value .< low)
    value.replace(with: high, where: value .> high)
    UnsafeMutableRawPointer(output + offset).storeBytes(of: value, as: BlockVector.self)
}
#endif
