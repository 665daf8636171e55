import COpenBLAS
import Foundation

/// Gemm: alpha * A' * B' + beta * C, C broadcast to [M, N].
struct GemmKernel: Kernel {
    let m: Int, n: Int, k: Int
    let transA: Bool, transB: Bool
    let alpha: Float, beta: Float
    /// C's stride along M and N (0 where broadcast); nil without C.
    let cStrides: (m: Int, n: Int)?
    var multiplyAdds: Int { m * n * k }

    func run(_ context: KernelContext) {
        let y = context.outputs[0]
        if let cStrides, context.inputs.count > 2 {
            let c = context.inputs[2]
            for i in 0..<m {
                for j in 0..<n { y[i * n + j] = beta * c[i * cStrides.m + j * cStrides.n] }
            }
        }
        cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                    Int32(m), Int32(n), Int32(k), alpha,
                    context.inputs[0], Int32(transA ? m : k), context.inputs[1], Int32(transB ? k : n),
                    cStrides == nil || context.inputs.count < 3 ? 0 : 1, y, Int32(n))
    }
}

/// MatMul of [..., M, K] by [..., K, N] with broadcast batch dimensions.
struct MatMulKernel: Kernel {
    let m: Int, n: Int, k: Int
    /// For each output batch index, the offsets of A's and B's matrices.
    let batchOffsets: [(a: Int, b: Int)]
    var multiplyAdds: Int { batchOffsets.count * m * n * k }

    func run(_ context: KernelContext) {
        for (index, offsets) in batchOffsets.enumerated() {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(m), Int32(n), Int32(k), 1,
                        context.inputs[0] + offsets.a, Int32(k), context.inputs[1] + offsets.b, Int32(n),
                        0, context.outputs[0] + index * m * n, Int32(n))
        }
    }
}

/// Softmax over `dimension` elements spaced `inner` apart, for each of `outer` x `inner` rows.
struct SoftmaxKernel: Kernel {
    let outer: Int, dimension: Int, inner: Int

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        context.team.parallelFor(outer * inner) { row in
            let base = (row / inner) * dimension * inner + row % inner
            var largest = -Float.infinity
            for i in 0..<dimension { largest = max(largest, x[base + i * inner]) }
            var sum: Float = 0
            for i in 0..<dimension {
                let e = exp(x[base + i * inner] - largest)
                y[base + i * inner] = e
                sum += e
            }
            for i in 0..<dimension { y[base + i * inner] /= sum }
        }
    }
}
