/// What a kernel runs with: its inputs and outputs (resolved when the session is built) and a
/// scratch area shared by all kernels, which run one after another.
struct KernelContext {
    let inputs: [UnsafePointer<Float>]
    let outputs: [UnsafeMutablePointer<Float>]
    let scratch: UnsafeMutablePointer<Float>
    /// The threads loops are split across.
    let team: ThreadTeam
    /// Which build of the innermost loops runs.
    let kernels: KernelSet
    /// Which build of the integer loops runs (the same unless a session is told otherwise).
    var integerKernels: KernelSet
    /// The innermost loops of the chosen build, stored: read through a computed property, each
    /// use copied the whole table (a retain and a release per loop in it), per row of a Softmax.
    let loops: KernelLoops

    init(inputs: [UnsafePointer<Float>], outputs: [UnsafeMutablePointer<Float>], scratch: UnsafeMutablePointer<Float>,
         team: ThreadTeam, kernels: KernelSet, integerKernels: KernelSet) {
        (self.inputs, self.outputs, self.scratch, self.team) = (inputs, outputs, scratch, team)
        (self.kernels, self.integerKernels, loops) = (kernels, integerKernels, kernels.loops)
    }

    /// How many threads work a loop.
    var threads: Int { team.size }
}

/// One compiled operator with its shapes fixed.
protocol Kernel {
    /// Scratch floats it needs while running on `threads` threads.
    func scratchCount(threads: Int) -> Int
    /// Multiply-adds per run (convolutions and matrix products; 0 for the rest).
    var multiplyAdds: Int { get }
    /// Which implementation the kernel chose, when it has several ("depthwise 3x3", ...).
    var variant: String? { get }
    func run(_ context: KernelContext)
}

extension Kernel {
    func scratchCount(threads: Int) -> Int { 0 }
    var multiplyAdds: Int { 0 }
    var variant: String? { nil }
}

/// Row-major strides of a shape.
func strides(of shape: [Int]) -> [Int] {
    var result = [Int](repeating: 1, count: shape.count)
    var running = 1
    for axis in shape.indices.reversed() {
        result[axis] = running
        running *= shape[axis]
    }
    return result
}
