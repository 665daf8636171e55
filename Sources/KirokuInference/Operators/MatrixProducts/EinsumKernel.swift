/// Einsum as a short run of the engine's own kernels (see `OperatorCompiler.einsum`): operands
/// transposed so that their labels run batch, kept, summed; a batched matrix product or a sum over
/// the trailing labels; the result transposed to the output's labels. Values between stages live
/// in scratch.
struct EinsumKernel: Kernel {
    /// Where a stage reads or writes: one of the node's inputs, the node's output, or scratch.
    enum Slot {
        case input(Int)
        case scratch(offset: Int)
        case output
    }

    /// One kernel run with its operands.
    struct Stage {
        let kernel: any Kernel
        let inputs: [Slot]
        let output: Slot
    }

    let stages: [Stage]
    /// Floats of scratch the stages' values take, before the stages' own scratch.
    let valueFloats: Int

    var multiplyAdds: Int { stages.map(\.kernel.multiplyAdds).reduce(0, +) }
    var variant: String? { stages.map { String(describing: type(of: $0.kernel)).replacingOccurrences(of: "Kernel", with: "") }.joined(separator: " + ") }

    func scratchCount(threads: Int) -> Int { valueFloats + (stages.map { $0.kernel.scratchCount(threads: threads) }.max() ?? 0) }

    func run(_ context: KernelContext) {
        func pointer(_ slot: Slot) -> UnsafeMutablePointer<Float> {
            switch slot {
            case .input(let index): UnsafeMutablePointer(mutating: context.inputs[index])
            case .scratch(let offset): context.scratch + offset
            case .output: context.outputs[0]
            }
        }
        for stage in stages {
            stage.kernel.run(KernelContext(inputs: stage.inputs.map { UnsafePointer(pointer($0)) }, outputs: [pointer(stage.output)],
                                           scratch: context.scratch + valueFloats, team: context.team, kernels: context.kernels,
                                           integerKernels: context.integerKernels))
        }
    }
}
