/// One channel of a depthwise convolution, computed along output rows 8 outputs at a time.
public enum DepthwiseChannel {
    /// output[run.target ..< run.target + run.count] = bias + the taps' weights times the padded
    /// plane at run.source + tapOffsets[tap], for every run, clamped to `bounds` (a fused Relu or
    /// Clip; -inf...inf for none) before it is stored; `independentSums` runs at a time so the adds
    /// do not wait on each other.
    public static func accumulate(_ padded: UnsafePointer<Float>, tapOffsets: UnsafeBufferPointer<Int>,
                                  runs: UnsafeBufferPointer<(source: Int, target: Int, count: Int)>,
                                  filter: UnsafePointer<Float>, bias: Float, bounds: ClosedRange<Float>,
                                  output: UnsafeMutablePointer<Float>) {
        let base = UnsafeRawPointer(padded)
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: independentSums) { sums in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: independentSums) { sources in
                for group in Swift.stride(from: 0, to: runs.count, by: independentSums) {
                    // A short last group repeats its last run.
                    for s in 0..<independentSums {
                        sources[s] = runs[min(group &+ s, runs.count &- 1)].source &* 4
                        sums[s] = Vector(repeating: bias)
                    }
                    for tap in 0..<tapOffsets.count {
                        let w = Vector(repeating: filter[tap]), offset = tapOffsets[tap] &* 4
                        for s in 0..<independentSums {
                            sums[s] = multiplyAdd(sums[s], w, base.loadUnaligned(fromByteOffset: sources[s] &+ offset, as: Vector.self))
                        }
                    }
                    for s in 0..<min(independentSums, runs.count &- group) {
                        let run = runs[group &+ s]
                        var value = sums[s]
                        value.replace(with: low, where: value .< low)
                        value.replace(with: high, where: value .> high)
                        if run.count == 8 {
                            UnsafeMutableRawPointer(output + run.target).storeBytes(of: value, as: Vector.self)
                        } else {
                            for lane in 0..<run.count { output[run.target &+ lane] = value[lane] }
                        }
                    }
                }
            }
        }
    }
}
