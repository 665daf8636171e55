/// GatherND with indices known at load: output slice j (of `sliceLength` floats) copied from the
/// input at `offsets[j]`.
struct GatherSlicesKernel: Kernel {
    let offsets: [Int]
    let sliceLength: Int

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        for (j, offset) in offsets.enumerated() { (y + j * sliceLength).update(from: x + offset, count: sliceLength) }
    }
}

/// ScatterND with indices known at load: the data copied, then update slice j (of `sliceLength`
/// floats) written at `offsets[j]`, or combined with what is there (ONNX's reduction), in order.
struct ScatterSlicesKernel: Kernel {
    enum Reduction: String, CaseIterable {
        case none, add, mul, max, min
    }

    let count: Int
    let offsets: [Int]
    let sliceLength: Int
    let reduction: Reduction

    func run(_ context: KernelContext) {
        let data = context.inputs[0], updates = context.inputs[1], y = context.outputs[0]
        if UnsafePointer(y) != data { y.update(from: data, count: count) }
        for (j, offset) in offsets.enumerated() {
            let target = y + offset, source = updates + j * sliceLength
            switch reduction {
            case .none: target.update(from: source, count: sliceLength)
            case .add: for i in 0..<sliceLength { target[i] += source[i] }
            case .mul: for i in 0..<sliceLength { target[i] *= source[i] }
            case .max: for i in 0..<sliceLength { target[i] = Swift.max(target[i], source[i]) }
            case .min: for i in 0..<sliceLength { target[i] = Swift.min(target[i], source[i]) }
            }
        }
    }
}
