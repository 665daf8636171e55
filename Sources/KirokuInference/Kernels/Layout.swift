/// Copies the input unchanged (Reshape, Flatten, Squeeze, Unsqueeze: only the shape changes).
struct CopyKernel: Kernel {
    let count: Int

    func run(_ context: KernelContext) {
        context.outputs[0].update(from: context.inputs[0], count: count)
    }
}

/// Concat along an axis.
struct ConcatKernel: Kernel {
    let outer: Int
    /// Each input's extent along the axis times the inner size.
    let chunks: [Int]

    /// The copies (one per input and outer index) are split across the threads.
    func run(_ context: KernelContext) {
        let total = chunks.reduce(0, +)
        let starts = chunks.indices.map { chunks[..<$0].reduce(0, +) }
        context.team.parallelFor(outer * chunks.count) { index in
            let (o, i) = (index / chunks.count, index % chunks.count)
            (context.outputs[0] + o * total + starts[i]).update(from: context.inputs[i] + o * chunks[i], count: chunks[i])
        }
    }
}

/// Transpose by a permutation of the axes.
struct TransposeKernel: Kernel {
    let outputShape: [Int]
    /// The input stride along each output axis.
    let sourceStrides: [Int]

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        var index = [Int](repeating: 0, count: outputShape.count)
        for i in 0..<outputShape.reduce(1, *) {
            var source = 0
            for axis in index.indices { source += index[axis] * sourceStrides[axis] }
            y[i] = x[source]
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < outputShape[axis] { break }
                index[axis] = 0
            }
        }
    }
}

/// Constant padding (negative pads crop).
struct PadKernel: Kernel {
    let inputShape: [Int]
    let outputShape: [Int]
    let begin: [Int]
    let value: Float

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        let inputStrides = strides(of: inputShape)
        var index = [Int](repeating: 0, count: outputShape.count)
        for i in 0..<outputShape.reduce(1, *) {
            var source = 0
            var inside = true
            for axis in index.indices {
                let position = index[axis] - begin[axis]
                if position < 0 || position >= inputShape[axis] { inside = false; break }
                source += position * inputStrides[axis]
            }
            y[i] = inside ? x[source] : value
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < outputShape[axis] { break }
                index[axis] = 0
            }
        }
    }
}
