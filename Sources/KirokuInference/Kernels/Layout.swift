/// Copies the input unchanged (Reshape, Flatten, Squeeze, Unsqueeze: only the shape changes).
struct CopyKernel: Kernel {
    let count: Int

    func run(_ context: KernelContext) {
        context.outputs[0].update(from: context.inputs[0], count: count)
    }
}

/// Concat along an axis: for each index before the axis, each input's chunk copied to its place.
/// Inputs computed straight into their place (see Compiler.placeConcatInputs) are not copied.
struct ConcatKernel: Kernel {
    let outer: Int
    /// The output's extent along the axis times the inner size.
    let total: Int
    /// Where each copied input's chunk starts within that, and its length (extent times inner size).
    let parts: [(start: Int, count: Int)]
    /// How many of the concatenated inputs were computed in place instead.
    let inPlace: Int

    /// A Concat of inputs whose chunks (extent along the axis times the inner size) are `chunks`.
    init(outer: Int, chunks: [Int]) {
        self.init(outer: outer, total: chunks.reduce(0, +), parts: chunks.indices.map { (chunks[..<$0].reduce(0, +), chunks[$0]) }, inPlace: 0)
    }

    init(outer: Int, total: Int, parts: [(start: Int, count: Int)], inPlace: Int) {
        self.outer = outer
        self.total = total
        self.parts = parts
        self.inPlace = inPlace
    }

    var variant: String? { inPlace == 0 ? nil : "\(inPlace) of \(inPlace + parts.count) in place" }

    /// The copies (one per input and outer index) are split across the threads.
    func run(_ context: KernelContext) {
        context.team.parallelFor(outer * parts.count) { index in
            let (o, i) = (index / parts.count, index % parts.count)
            (context.outputs[0] + o * total + parts[i].start).update(from: context.inputs[i] + o * parts[i].count, count: parts[i].count)
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
