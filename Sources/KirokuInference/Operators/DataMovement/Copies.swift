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

    /// The copies are split across the threads by input and span of outer indices (about 16K
    /// floats a span); chunks of one float, a stack along a new last axis (RoPE's rotated pairs),
    /// are stored one by one rather than copied (a task and a copy call per float took 7x the time).
    func run(_ context: KernelContext) {
        let span = max(1, min(outer, 16 * 1024 / max(1, total))), spans = (outer + span - 1) / span
        context.team.parallelFor(spans * parts.count) { index in
            let (first, part) = (index / parts.count * span, parts[index % parts.count])
            let source = context.inputs[index % parts.count], target = context.outputs[0] + part.start
            for o in first..<min(outer, first + span) {
                if part.count == 1 { target[o * total] = source[o] }
                else { (target + o * total).update(from: source + o * part.count, count: part.count) }
            }
        }
    }
}

/// Transpose by a permutation of the axes. Axes of one element are dropped and axes that stay
/// neighbours are merged first, so NCHW <-> NHWC becomes a batch of 2-D transposes, done in tiles
/// that stay in cache; any other permutation walks the output with the last axis as a strided loop.
struct TransposeKernel: Kernel {
    /// The merged output dimensions, and the input stride along each.
    let outputShape: [Int]
    let sourceStrides: [Int]
    /// The input as [batch, rows, columns] when the merged permutation swaps the last two axes.
    let matrices: (batch: Int, rows: Int, columns: Int)?

    init(inputShape: [Int], perm: [Int]) {
        // Drop axes of one element, then merge output axes that are consecutive in the input too.
        let kept = perm.filter { inputShape[$0] != 1 }
        var groups: [[Int]] = []
        for axis in kept {
            if let last = groups.last?.last, axis == last + 1 { groups[groups.count - 1].append(axis) } else { groups.append([axis]) }
        }
        let order = groups.map { $0[0] }.sorted()
        let mergedInput = order.map { first in groups.first { $0[0] == first }!.reduce(1) { $0 * inputShape[$1] } }
        let mergedPerm = groups.map { group in order.firstIndex(of: group[0])! }
        let inputStrides = strides(of: mergedInput)
        outputShape = mergedPerm.map { mergedInput[$0] }
        sourceStrides = mergedPerm.map { inputStrides[$0] }
        let rank = mergedPerm.count
        if rank >= 2, mergedPerm == Array(0..<(rank - 2)) + [rank - 1, rank - 2] {
            matrices = (mergedInput[..<(rank - 2)].reduce(1, *), mergedInput[rank - 2], mergedInput[rank - 1])
        } else {
            matrices = nil
        }
    }

    var variant: String? { matrices.map { "\($0.batch) x \($0.rows)x\($0.columns) tiles" } }

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        if let (batch, rows, columns) = matrices {
            // Bands of 16 input rows, each written as 16 floats of every output row (the build's TransposeTiles).
            let band = 16, bands = (rows + band - 1) / band, transpose = context.loops.transposeRows
            context.team.parallelFor(batch * bands) { index in
                let b = index / bands, r0 = index % bands * band
                transpose(r0..<min(r0 + band, rows), x + b * rows * columns, rows, columns, y + b * rows * columns)
            }
            return
        }
        // Rows of the last output axis, shared out in runs of at least 16,384 values; each run
        // finds its first row's input offset, then steps the index like an odometer.
        let rank = outputShape.count, inner = outputShape.last ?? 1, step = sourceStrides.last ?? 0
        let rowCount = outputShape.reduce(1, *) / max(inner, 1)
        let rowsPerRun = max(1, 16384 / max(inner, 1)), runs = (rowCount + rowsPerRun - 1) / rowsPerRun
        let (shape, strides) = (outputShape, sourceStrides)
        context.team.parallelFor(runs) { run in
            let first = run * rowsPerRun, last = min(rowCount, first + rowsPerRun)
            withUnsafeTemporaryAllocation(of: Int.self, capacity: max(rank - 1, 1)) { index in
                var rest = first, source = 0
                for axis in (0..<max(rank - 1, 0)).reversed() {
                    index[axis] = rest % shape[axis]
                    rest /= shape[axis]
                    source += index[axis] * strides[axis]
                }
                for row in first..<last {
                    let output = y + row * inner
                    if step == 1 {
                        output.update(from: x + source, count: inner)
                    } else {
                        for i in 0..<inner { output[i] = x[source + i * step] }
                    }
                    var axis = rank - 2
                    while axis >= 0 {
                        index[axis] += 1
                        source += strides[axis]
                        if index[axis] < shape[axis] { break }
                        source -= strides[axis] * shape[axis]
                        index[axis] = 0
                        axis -= 1
                    }
                }
            }
        }
    }
}
