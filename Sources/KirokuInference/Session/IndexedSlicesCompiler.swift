extension OperatorCompiler {
    /// GatherND (batch_dims 0) and ScatterND (every reduction) with their indices known at load, as
    /// Swin's attention masks and relative position tables have them: each index tuple is the
    /// offset of a whole slice, checked against the data's shape.
    func indexedSlices(_ data: CompiledValue) throws(InferenceError) -> KernelPlan {
        let shape = data.shape
        guard let indices = try compiler.constantInput(node, 1), let values = indices.integers, let depth = indices.shape.last,
              depth >= 1, depth <= shape.count else {
            throw compiler.fail(node, "needs integer indices known at load, each addressing 1 to \(shape.count) axes of the data")
        }
        guard node.int("batch_dims", default: 0) == 0 else { throw compiler.fail(node, "batch_dims other than 0 is not supported") }
        let dataStrides = strides(of: shape), sliceShape = Array(shape[depth...]), sliceLength = sliceShape.reduce(1, *)
        var offsets: [Int] = []
        for start in stride(from: 0, to: values.count, by: depth) {
            var offset = 0
            for axis in 0..<depth {
                let index = values[start + axis]
                guard index >= -shape[axis], index < shape[axis] else {
                    throw compiler.shapeError(node, "index \(index) is out of range for axis \(axis) of \(shape)")
                }
                offset += (index < 0 ? index + shape[axis] : index) * dataStrides[axis]
            }
            offsets.append(offset)
        }
        // The indices address the batch axis too: the images cannot run one at a time.
        compiler.mixesImages = true
        let tuples = Array(indices.shape.dropLast())
        if node.op == "GatherND" {
            return KernelPlan(kernel: GatherSlicesKernel(offsets: offsets, sliceLength: sliceLength), operands: [data],
                              outputShape: tuples + sliceShape)
        }
        let updates = try input(2)
        guard updates.shape == tuples + sliceShape else {
            throw compiler.shapeError(node, "updates \(updates.shape) for indices \(indices.shape) into \(shape) (need \(tuples + sliceShape))")
        }
        let reduction = node.string("reduction", default: "none")
        guard let mode = ScatterSlicesKernel.Reduction(rawValue: reduction) else {
            throw compiler.fail(node, "reduction '\(reduction)' is not one of none, add, mul, max, min")
        }
        return KernelPlan(kernel: ScatterSlicesKernel(count: shape.reduce(1, *), offsets: offsets, sliceLength: sliceLength, reduction: mode),
                          operands: [data, updates], outputShape: shape)
    }
}
