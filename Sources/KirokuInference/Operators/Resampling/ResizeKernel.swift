/// Resize: each axis that changes resampled in turn (`AxisResampling`, the innermost first), the
/// input as [outer, length, inner] rows, each output row a weighted sum of its taps' input rows;
/// between passes the values live in scratch. tf_crop_and_resize's outputs outside the input are
/// then set to the extrapolation value.
struct ResizeKernel: Kernel {
    let inputShape: [Int]
    /// The axes resampled and how, innermost first.
    let passes: [(axis: Int, sampling: AxisResampling)]
    let extrapolation: Float

    /// The shape after each pass.
    private var shapes: [[Int]] {
        var shape = inputShape
        return passes.map { pass in
            shape[pass.axis] = pass.sampling.output
            return shape
        }
    }

    var outputShape: [Int] { shapes.last ?? inputShape }

    /// Two buffers for the values between passes.
    func scratchCount(threads: Int) -> Int { 2 * (shapes.dropLast().map { $0.reduce(1, *) }.max() ?? 0) }

    func run(_ context: KernelContext) {
        guard !passes.isEmpty else {
            context.outputs[0].update(from: context.inputs[0], count: inputShape.reduce(1, *))
            return
        }
        let shapes = shapes, half = scratchCount(threads: 1) / 2
        var source = context.inputs[0], shape = inputShape
        for (number, pass) in passes.enumerated() {
            let target = number == passes.count - 1 ? context.outputs[0] : context.scratch + number % 2 * half
            resample(source, into: target, shape: shape, pass.axis, pass.sampling, team: context.team)
            (source, shape) = (UnsafePointer(target), shapes[number])
        }
        if passes.contains(where: { $0.sampling.outside.contains(true) }) { extrapolate(context.outputs[0]) }
    }

    private func resample(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, shape: [Int], _ axis: Int,
                          _ sampling: AxisResampling, team: ThreadTeam) {
        let outer = shape[..<axis].reduce(1, *), inner = shape[(axis + 1)...].reduce(1, *), taps = sampling.taps
        let (input, output) = (sampling.input, sampling.output)
        sampling.indices.withUnsafeBufferPointer { indices in
            sampling.weights.withUnsafeBufferPointer { weights in
                team.parallelFor(outer) { o in
                    let rows = x + o * input * inner
                    if taps == 1, inner == 1 {
                        // Nearest along the innermost axis: a gather (a copy call per value took
                        // GhostNetV2's 14 upsamplings 3.1 of its 12.7 ms).
                        let target = y + o * output
                        for j in 0..<output { target[j] = rows[indices[j]] }
                        return
                    }
                    for j in 0..<output {
                        let target = y + (o * output + j) * inner, first = j * taps
                        if taps == 1 {
                            target.update(from: rows + indices[first] * inner, count: inner)
                            continue
                        }
                        let w0 = weights[first], row0 = rows + indices[first] * inner
                        for i in 0..<inner { target[i] = w0 * row0[i] }
                        for t in (first + 1)..<(first + taps) {
                            let weight = weights[t], row = rows + indices[t] * inner
                            for i in 0..<inner { target[i] += weight * row[i] }
                        }
                    }
                }
            }
        }
    }

    /// The extrapolation value wherever any resampled axis's coordinate fell outside the input.
    private func extrapolate(_ y: UnsafeMutablePointer<Float>) {
        let shape = outputShape, outside = Dictionary(uniqueKeysWithValues: passes.map { ($0.axis, $0.sampling.outside) })
        var index = [Int](repeating: 0, count: shape.count)
        for i in 0..<shape.reduce(1, *) {
            if outside.contains(where: { $0.value[index[$0.key]] }) { y[i] = extrapolation }
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < shape[axis] { break }
                index[axis] = 0
            }
        }
    }
}
