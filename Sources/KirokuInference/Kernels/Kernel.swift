import Dispatch

/// What a kernel runs with: its inputs and outputs (resolved when the session is built) and a
/// scratch area shared by all kernels, which run one after another.
struct KernelContext {
    let inputs: [UnsafePointer<Float>]
    let outputs: [UnsafeMutablePointer<Float>]
    let scratch: UnsafeMutablePointer<Float>
    let threads: Int
}

/// One compiled operator with its shapes fixed.
protocol Kernel {
    /// Scratch floats it needs while running.
    var scratchCount: Int { get }
    /// Multiply-adds per run (convolutions and matrix products; 0 for the rest).
    var multiplyAdds: Int { get }
    /// Which implementation the kernel chose, when it has several ("depthwise 3x3", ...).
    var variant: String? { get }
    func run(_ context: KernelContext)
}

extension Kernel {
    var scratchCount: Int { 0 }
    var multiplyAdds: Int { 0 }
    var variant: String? { nil }
}

/// Runs `body(index)` for 0..<count, spread over up to `threads` threads.
func parallelFor(_ count: Int, threads: Int, _ body: (Int) -> Void) {
    guard threads > 1, count > 1 else {
        for index in 0..<count { body(index) }
        return
    }
    let chunks = min(threads, count)
    withoutActuallyEscaping(body) { body in
        // Kernels hand each index disjoint memory, so running the body concurrently is safe.
        let shared = UncheckedSendable(body)
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            for index in stride(from: chunk, to: count, by: chunks) { shared.value(index) }
        }
    }
}

/// Carries a value across a concurrency boundary the compiler cannot check (see parallelFor).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
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
