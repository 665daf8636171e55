import COpenBLAS
import Foundation

/// Gemm: alpha * A' * B' + beta * C, C broadcast to [M, N]. The output's columns are split
/// across the threads (OpenBLAS itself runs single-threaded); a single row (batch 1) is a
/// matrix-vector product, which sgemv runs at memory speed where sgemm would not.
struct GemmKernel: Kernel {
    let m: Int, n: Int, k: Int
    let transA: Bool, transB: Bool
    let alpha: Float, beta: Float
    /// C's stride along M and N (0 where broadcast); nil without C.
    let cStrides: (m: Int, n: Int)?
    var multiplyAdds: Int { m * n * k }

    /// Fewest output columns worth a thread of their own.
    static let minimumColumns = 64

    func run(_ context: KernelContext) {
        let y = context.outputs[0]
        let addsC = cStrides != nil && context.inputs.count > 2
        if let cStrides, addsC {
            let c = context.inputs[2]
            for i in 0..<m {
                for j in 0..<n { y[i * n + j] = beta * c[i * cStrides.m + j * cStrides.n] }
            }
        }
        let (a, b, keep): (UnsafePointer<Float>, UnsafePointer<Float>, Float) = (context.inputs[0], context.inputs[1], addsC ? 1 : 0)
        let tile = max(Self.minimumColumns, (n + context.threads - 1) / context.threads)
        context.team.parallelFor((n + tile - 1) / tile) { index in
            let first = index * tile, count = Int32(min(tile, n - first))
            // B' columns first..<first + count: rows of B when transposed, columns otherwise.
            let columns = b + (transB ? first * k : first), ldb = Int32(transB ? k : n)
            if m == 1 {
                cblas_sgemv(CblasRowMajor, transB ? CblasNoTrans : CblasTrans, transB ? count : Int32(k), transB ? Int32(k) : count,
                            alpha, columns, ldb, a, 1, keep, y + first, 1)
            } else {
                cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                            Int32(m), count, Int32(k), alpha, a, Int32(transA ? m : k), columns, ldb, keep, y + first, Int32(n))
            }
        }
    }
}

/// MatMul of [..., M, K] by [..., K, N] with broadcast batch dimensions. The products are shared
/// out over the threads, each cut into bands of rows when there are fewer products than threads
/// (a transformer's [tokens, width] by [width, hidden] is one product of 197 rows).
struct MatMulKernel: Kernel {
    let m: Int, n: Int, k: Int
    /// For each output batch index, the offsets of A's and B's matrices.
    let batchOffsets: [(a: Int, b: Int)]
    /// N values added to every row (an Add after the MatMul, folded in by GraphPasses.foldBiasIntoMatMul).
    let bias: UnsafePointer<Float>?
    /// An activation after it (a transformer's GELU), run on each band of rows as it is written.
    var activation: Activation? = nil
    /// A constant B packed at load into PackedProduct's panels, and that loop (builds that have
    /// it); A is then the only operand and sgemm is not called.
    var panels: (packed: UnsafePointer<Float>, multiply: KernelLoops.PackedMultiply)? = nil
    /// For a B known only at run time, PackedProduct's loop with B packed into panels on each run
    /// (builds whose products beat sgemm: KernelLoops.panelProducts); nil: sgemm.
    var runtimePanels: KernelLoops.PackedMultiply? = nil
    var multiplyAdds: Int { batchOffsets.count * m * n * k }
    var variant: String? { panels != nil ? "packed panels" : runtimePanels != nil ? "panels packed per run" : nil }
    /// One B in panels per thread, where B is packed on each run.
    func scratchCount(threads: Int) -> Int { runtimePanels == nil ? 0 : threads * ((n + Self.panelColumns - 1) / Self.panelColumns * Self.panelColumns) * k }

    /// Fewest rows worth a band of their own.
    static let minimumRows = 16

    func run(_ context: KernelContext) {
        let products = batchOffsets.count
        guard products > 0, m > 0 else { return }
        if let panels {
            runPanels(context, panels.packed, panels.multiply)
            return
        }
        let bands = products >= context.threads ? 1 : min((context.threads + products - 1) / products, max(1, m / Self.minimumRows))
        let rows = (m + bands - 1) / bands
        context.team.parallelFor(products * bands) { task, worker in
            let index = task / bands, first = task % bands * rows, count = min(rows, m - first), offsets = batchOffsets[index]
            guard count > 0 else { return }
            let output = context.outputs[0] + index * m * n + first * n
            if let multiply = runtimePanels {
                let panelCount = (n + Self.panelColumns - 1) / Self.panelColumns, panels = context.scratch + worker * panelCount * Self.panelColumns * k
                Self.pack(context.inputs[1] + offsets.b, n: n, k: k, into: panels)
                multiply(context.inputs[0] + offsets.a + first * k, k, k, panels, n, 0..<count, 0..<panelCount, bias, -.infinity ... .infinity,
                         output, n)
                activation?.apply(UnsafeMutableBufferPointer(start: output, count: count * n), loops: context.loops)
                return
            }
            if let bias {
                for row in 0..<count { (output + row * n).update(from: bias, count: n) }
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(count), Int32(n), Int32(k), 1,
                        context.inputs[0] + offsets.a + first * k, Int32(k), context.inputs[1] + offsets.b, Int32(n),
                        bias == nil ? 0 : 1, output, Int32(n))
            activation?.apply(UnsafeMutableBufferPointer(start: output, count: count * n), loops: context.loops)
        }
    }
}

extension MatMulKernel {
    /// Columns of one of PackedProduct's panels (the AVX2 build's KirokuKernels).
    static let panelColumns = 16

    /// A product of `m` rows by weights known at load, packed into PackedProduct's panels: B
    /// [k, n] row-major (or [n, k], read transposed) times `scale`; panel p holds B[row, 16p + c]
    /// at (p * k + row) * 16 + c, zero past the last column.
    static func packed(m: Int, n: Int, k: Int, weights b: [Float], transposed: Bool = false, scale: Float = 1, bias: UnsafePointer<Float>?,
                       multiply: @escaping KernelLoops.PackedMultiply, store: (Tensor) -> UnsafePointer<Float>) -> MatMulKernel {
        let packed = panels(n: n, k: k) { row, column in scale * b[transposed ? column * k + row : row * n + column] }
        var product = MatMulKernel(m: m, n: n, k: k, batchOffsets: [(0, 0)], bias: bias)
        product.panels = (store(Tensor(shape: [packed.count], data: packed)), multiply)
        return product
    }

    /// B [k, n] row-major at `b` into PackedProduct's panels at `panels` (as `panels(n:k:_:)` lays them out).
    static func pack(_ b: UnsafePointer<Float>, n: Int, k: Int, into panels: UnsafeMutablePointer<Float>) {
        let width = panelColumns
        for p in 0..<(n + width - 1) / width {
            let column = p * width, valid = min(width, n - column), target = panels + p * k * width
            for row in 0..<k {
                (target + row * width).update(from: b + row * n + column, count: valid)
                if valid < width { (target + row * width + valid).update(repeating: 0, count: width - valid) }
            }
        }
    }

    /// A [k, n] matrix, element (row, column) given by `element`, in PackedProduct's panels: panel
    /// p holds (row, 16p + c) at (p * k + row) * 16 + c, zero past the last column.
    static func panels(n: Int, k: Int, _ element: (_ row: Int, _ column: Int) -> Float) -> [Float] {
        let width = Self.panelColumns
        var packed = [Float](repeating: 0, count: (n + width - 1) / width * k * width)
        for row in 0..<k {
            for column in 0..<n { packed[(column / width * k + row) * width + column % width] = element(row, column) }
        }
        return packed
    }

    /// The product by packed panels, on several threads shared out by rows (each thread then
    /// reads all of B) where A has more rows than B columns, by panels (each reads all of A) where
    /// not; two shares per thread. A clamp (Relu, Clip) runs as the sums are stored, any other
    /// activation on each share's outputs once they are finished.
    fileprivate func runPanels(_ context: KernelContext, _ packed: UnsafePointer<Float>, _ multiply: KernelLoops.PackedMultiply) {
        let a = context.inputs[0], y = context.outputs[0], shares = 2 * context.threads
        let panelCount = (n + Self.panelColumns - 1) / Self.panelColumns
        let bounds = activation?.bounds ?? -.infinity ... .infinity, after = activation?.bounds == nil ? activation : nil
        if context.threads == 1 || (m >= n && m >= 6 * shares) {
            let shareRows = context.threads == 1 ? m : (m + shares - 1) / shares
            context.team.parallelFor((m + shareRows - 1) / shareRows) { share in
                let rows = (share * shareRows)..<min(m, (share + 1) * shareRows)
                multiply(a, k, k, packed, n, rows, 0..<panelCount, bias, bounds, y, n)
                after?.apply(UnsafeMutableBufferPointer(start: y + rows.lowerBound * n, count: rows.count * n), loops: context.loops)
            }
            return
        }
        let sharePanels = (panelCount + shares - 1) / shares
        context.team.parallelFor((panelCount + sharePanels - 1) / sharePanels) { share in
            let panels = (share * sharePanels)..<min(panelCount, (share + 1) * sharePanels)
            multiply(a, k, k, packed, n, 0..<m, panels, bias, bounds, y, n)
            guard let after else { return }
            let first = panels.lowerBound * Self.panelColumns, count = min(n, panels.upperBound * Self.panelColumns) - first
            for row in 0..<m { after.apply(UnsafeMutableBufferPointer(start: y + row * n + first, count: count), loops: context.loops) }
        }
    }
}

/// Softmax over `dimension` elements spaced `inner` apart, for each of `outer` x `inner` rows.
struct SoftmaxKernel: Kernel {
    let outer: Int, dimension: Int, inner: Int

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        if inner == 1 {
            // Rows along the last axis: contiguous, through the build's vector loops, shared out
            // in runs of rows of at least 4,096 values (attention's rows are short and many).
            let rowsPerRun = max(1, 4096 / max(dimension, 1)), runs = (outer + rowsPerRun - 1) / rowsPerRun
            context.team.parallelFor(runs) { run in
                for row in (run * rowsPerRun)..<min(outer, (run + 1) * rowsPerRun) {
                    context.loops.softmax(x + row * dimension, y + row * dimension, dimension)
                }
            }
            return
        }
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
