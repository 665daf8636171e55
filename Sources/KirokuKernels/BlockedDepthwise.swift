#if KIROKU_AVX2
/// A depthwise convolution over channel-blocked data (ChannelBlocks): a vector is one position's 8
/// channels, so every tap is one multiply-add of whole vectors, for any stride, with no
/// interleaving or transposes; outputs are summed 8 at a time, so the adds do not wait on one
/// another. Wide rows are read where they lie (`rows`: taps in the padding skipped); small planes,
/// whose rows are mostly edge, from a zero-padded copy (`gathered`: any 8 outputs at once).
public enum BlockedDepthwise {
    ///
    /// Output rows `rows` of one block: input plane `input` (inputSize positions of 8 floats),
    /// output plane `output` (outputSize), `weights` [tap][8] (taps row by row of the kernel),
    /// `bias` [8]; output (oh, ow) = clamp(bias + the sum over taps (ki, kj) inside the input of
    /// weights[ki * kw + kj] * input(oh * sh - top + ki * dh, ow * sw - left + kj * dw)), clamped
    /// to `bounds` (a fused Relu or Clip; -inf...inf for none).
    /// Wide rows, read where they lie: the taps in the padding are skipped (whole kernel rows
    /// at the top and bottom, columns at the left and right edges).
    public static func rows(_ rows: Range<Int>, input: UnsafePointer<Float>, inputSize: (h: Int, w: Int), output: UnsafeMutablePointer<Float>,
                            outputSize: (h: Int, w: Int), kernel: (h: Int, w: Int), stride: (h: Int, w: Int), dilation: (h: Int, w: Int),
                            pads: (top: Int, left: Int), weights: UnsafePointer<Float>, bias: UnsafePointer<Float>, bounds: ClosedRange<Float>) {
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        let start = UnsafeRawPointer(bias).loadUnaligned(as: Vector.self), filter = UnsafeRawPointer(weights)
        let (height, width) = inputSize, outWidth = outputSize.w
        // Output columns whose every tap lies inside the row.
        let inner = pads.left > 0 ? (pads.left &+ stride.w &- 1) / stride.w : 0
        let reach = width &- 1 &- (kernel.w &- 1) &* dilation.w &+ pads.left
        let innerEnd = Swift.max(inner, Swift.min(outWidth, reach >= 0 ? reach / stride.w &+ 1 : 0))
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 8) { sums in
            for oh in rows {
                let top = oh &* stride.h &- pads.top
                // Kernel rows inside the input.
                let firstRow = top >= 0 ? 0 : (-top &+ dilation.h &- 1) / dilation.h
                let endRow = Swift.min(kernel.h, top <= height &- 1 ? (height &- 1 &- top) / dilation.h &+ 1 : 0)
                let target = output + oh &* outWidth &* 8
                let finish = { (sum: Vector, ow: Int) in
                    var value = sum
                    value.replace(with: low, where: value .< low)
                    value.replace(with: high, where: value .> high)
                    UnsafeMutableRawPointer(target + ow &* 8).storeBytes(of: value, as: Vector.self)
                }
                // A run of `count` (8, 4 or 1, a constant where inlined) outputs from `ow` whose every tap lies inside the row.
                let run = { (ow: Int, count: Int) in
                    for s in 0..<count { sums[s] = start }
                    let left = ow &* stride.w &- pads.left
                    for ki in firstRow..<Swift.max(firstRow, endRow) {
                        let row = UnsafeRawPointer(input + ((top &+ ki &* dilation.h) &* width &+ left) &* 8)
                        for kj in 0..<kernel.w {
                            let w = filter.loadUnaligned(fromByteOffset: (ki &* kernel.w &+ kj) &* 32, as: Vector.self)
                            let tap = row + kj &* dilation.w &* 32
                            for s in 0..<count {
                                sums[s] = multiplyAdd(sums[s], w, tap.loadUnaligned(fromByteOffset: s &* stride.w &* 32, as: Vector.self))
                            }
                        }
                    }
                    for s in 0..<count { finish(sums[s], ow &+ s) }
                }
                // An output near an edge: the kernel columns inside the row only.
                let edge = { (ow: Int) in
                    var sum = start
                    let left = ow &* stride.w &- pads.left
                    let firstColumn = left >= 0 ? 0 : (-left &+ dilation.w &- 1) / dilation.w
                    let endColumn = Swift.min(kernel.w, left <= width &- 1 ? (width &- 1 &- left) / dilation.w &+ 1 : 0)
                    for ki in firstRow..<Swift.max(firstRow, endRow) {
                        let row = UnsafeRawPointer(input + ((top &+ ki &* dilation.h) &* width &+ left) &* 8)
                        for kj in firstColumn..<Swift.max(firstColumn, endColumn) {
                            let w = filter.loadUnaligned(fromByteOffset: (ki &* kernel.w &+ kj) &* 32, as: Vector.self)
                            sum = multiplyAdd(sum, w, row.loadUnaligned(fromByteOffset: kj &* dilation.w &* 32, as: Vector.self))
                        }
                    }
                    finish(sum, ow)
                }
                for ow in 0..<Swift.min(inner, outWidth) { edge(ow) }
                var ow = inner
                while ow &+ 8 <= innerEnd {
                    run(ow, 8)
                    ow &+= 8
                }
                while ow &+ 4 <= innerEnd {
                    run(ow, 4)
                    ow &+= 4
                }
                while ow < innerEnd {
                    run(ow, 1)
                    ow &+= 1
                }
                for ow in Swift.min(innerEnd, outWidth)..<outWidth { edge(ow) }
            }
        }
    }

    /// Every output of one block from its zero-padded copy `padded`: output p (a vector at
    /// output + 8p) = clamp(bias + the sum over taps t of weights[t] * padded[sources[p] + tapOffsets[t]]),
    /// clamped to `bounds`. The outputs go 8 at a time (the last 8 overlapping the 8 before where
    /// the count is not a multiple of 8); there are 8 at least.
    public static func gathered(_ padded: UnsafePointer<Float>, sources: UnsafeBufferPointer<Int>, tapOffsets: UnsafeBufferPointer<Int>,
                                weights: UnsafePointer<Float>, bias: UnsafePointer<Float>, bounds: ClosedRange<Float>,
                                output: UnsafeMutablePointer<Float>) {
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        let start = UnsafeRawPointer(bias).loadUnaligned(as: Vector.self), filter = UnsafeRawPointer(weights)
        let base = UnsafeRawPointer(padded), plane = sources.count
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 8) { sums in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: 8) { starts in
                var p = 0
                while p < plane {
                    let first = Swift.min(p, plane &- 8)
                    for s in 0..<8 {
                        starts[s] = sources[first &+ s] &* 4
                        sums[s] = start
                    }
                    for tap in 0..<tapOffsets.count {
                        let w = filter.loadUnaligned(fromByteOffset: tap &* 32, as: Vector.self), offset = tapOffsets[tap] &* 4
                        for s in 0..<8 { sums[s] = multiplyAdd(sums[s], w, base.loadUnaligned(fromByteOffset: starts[s] &+ offset, as: Vector.self)) }
                    }
                    for s in 0..<8 {
                        var value = sums[s]
                        value.replace(with: low, where: value .< low)
                        value.replace(with: high, where: value .> high)
                        UnsafeMutableRawPointer(output + (first &+ s) &* 8).storeBytes(of: value, as: Vector.self)
                    }
                    p &+= 8
                }
            }
        }
    }
}
#endif
