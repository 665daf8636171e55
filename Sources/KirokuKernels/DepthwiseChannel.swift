/// One channel of a depthwise convolution, computed along output rows 8 outputs at a time.
public enum DepthwiseChannel {
    /// Fills `padded` (paddedHeight x rowLength floats, zeroed here) with `plane` (height x width):
    /// row h at padded row h + top, each row split into `stride` phases: input column w goes to
    /// offset `phaseStarts[(w + left) % stride].offset + (w - first) / stride` of its row, so the
    /// inputs of 8 neighbouring outputs are 8 consecutive floats for every tap.
    public static func pad(_ plane: UnsafePointer<Float>, height: Int, width: Int, top: Int, left: Int, stride: Int,
                           rowLength: Int, paddedHeight: Int, phaseStarts: UnsafeBufferPointer<(first: Int, offset: Int)>,
                           into padded: UnsafeMutablePointer<Float>) {
        padded.update(repeating: 0, count: paddedHeight * rowLength)
        for h in 0..<height {
            let row = padded + (h + top) * rowLength, source = plane + h * width
            if stride == 1 {
                (row + left).update(from: source, count: width)
                continue
            }
            for (first, offset) in phaseStarts {
                let target = row + offset
                var w = first, i = 0
                if stride == 2 {
                    // Two phases: 8 outputs' worth of every other column from 16 consecutive floats.
                    while w + 16 <= width {
                        let pair = UnsafeRawPointer(source + w).loadUnaligned(as: SIMD16<Float>.self)
                        UnsafeMutableRawPointer(target + i).storeBytes(of: pair.evenHalf, as: SIMD8<Float>.self)
                        w &+= 16
                        i &+= 8
                    }
                }
                while w < width {
                    target[i] = source[w]
                    w &+= stride
                    i &+= 1
                }
            }
        }
    }

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
