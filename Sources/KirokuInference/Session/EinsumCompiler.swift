extension OperatorCompiler {
    /// Einsum of one operand (a transpose, or sums over labels it drops) or two (labels in both
    /// operands and the output are a batch, in one operand and the output rows or columns, in both
    /// operands only summed: a batched matrix product), with "..." for broadcast leading axes.
    /// Labels repeated within an operand (diagonals), and labels two operands drop that only one
    /// holds, are refused.
    func einsum() throws(InferenceError) -> KernelPlan {
        let operands = inputs.compactMap { $0 }
        guard (1...2).contains(operands.count) else { throw compiler.fail(node, "Einsum of \(operands.count) operands is not supported (one or two are)") }
        guard case .string(let equation)? = node.attributes["equation"] else { throw compiler.fail(node, "needs an equation") }
        let parsed = try EinsumEquation(equation, ranks: operands.map(\.shape.count), node: node, compiler: compiler)
        guard parsed.terms.count == operands.count else {
            throw compiler.shapeError(node, "equation '\(equation)' has \(parsed.terms.count) operands, the node \(operands.count)")
        }
        guard operands.allSatisfy({ $0.shape.allSatisfy { $0 > 0 } }) else {
            throw compiler.shapeError(node, "an operand is empty (\(operands.map(\.shape)))")
        }
        var extents: [Int: Int] = [:]
        for (term, operand) in zip(parsed.terms, operands) {
            for (label, extent) in zip(term, operand.shape) {
                let known = extents[label] ?? extent
                guard known == extent || known == 1 || extent == 1 else {
                    throw compiler.shapeError(node, "label \(parsed.name(label)) is \(known) in one place and \(extent) in another")
                }
                extents[label] = max(known, extent)
            }
        }
        let output = parsed.output, outputShape = output.map { extents[$0]! }
        guard ShapeMath.count(outputShape) != nil else {
            throw compiler.shapeError(node, "the output \(outputShape) is too large (over \(ShapeMath.maximumElements) elements)")
        }
        // Images run one at a time only where every run-time operand's first label is the output's first.
        if zip(parsed.terms, operands).contains(where: { term, operand in
            if case .constant = operand { return false }
            return term.first != output.first
        }) { compiler.mixesImages = true }
        let shapeOf = { (labels: [Int]) in labels.map { extents[$0]! } }
        var stages: [EinsumKernel.Stage] = [], floats = 0
        func scratch(_ count: Int) -> EinsumKernel.Slot {
            defer { floats += count }
            return .scratch(offset: floats)
        }
        /// The operand's labels put in `order` (a transpose stage unless they already are).
        func arranged(_ index: Int, _ order: [Int]) -> EinsumKernel.Slot {
            let term = parsed.terms[index], perm = order.map { term.firstIndex(of: $0)! }
            guard perm != Array(term.indices) else { return .input(index) }
            let slot = scratch(operands[index].shape.reduce(1, *))
            stages.append(.init(kernel: TransposeKernel(inputShape: operands[index].shape, perm: perm), inputs: [.input(index)], output: slot))
            return slot
        }
        /// The result, its labels `labels`, moved to the output's order.
        func finish(_ labels: [Int], product: any Kernel, inputs: [EinsumKernel.Slot]) {
            let perm = output.map { labels.firstIndex(of: $0)! }
            if perm == Array(labels.indices) {
                stages.append(.init(kernel: product, inputs: inputs, output: .output))
            } else {
                let slot = scratch(outputShape.reduce(1, *))
                stages.append(.init(kernel: product, inputs: inputs, output: slot))
                stages.append(.init(kernel: TransposeKernel(inputShape: shapeOf(labels), perm: perm), inputs: [slot], output: .output))
            }
        }
        if operands.count == 1 {
            let term = parsed.terms[0], kept = term.filter(output.contains), summed = term.filter { !output.contains($0) }
            let source = arranged(0, kept + summed), arrangedShape = shapeOf(kept + summed)
            let product: any Kernel = summed.isEmpty ? CopyKernel(count: arrangedShape.reduce(1, *))
                : ReduceKernel(inputShape: arrangedShape, axes: Set(kept.count..<term.count), mode: .sum)
            finish(kept, product: product, inputs: [source])
        } else {
            let (a, b) = (parsed.terms[0], parsed.terms[1])
            let batch = output.filter { a.contains($0) && b.contains($0) }, rows = output.filter { a.contains($0) && !b.contains($0) }
            let columns = output.filter { b.contains($0) && !a.contains($0) }, summed = a.filter { b.contains($0) && !output.contains($0) }
            if let alone = (a + b).first(where: { !output.contains($0) && !summed.contains($0) }) {
                throw compiler.fail(node, "label \(parsed.name(alone)) is summed within one operand; only labels of both operands are summed")
            }
            if let broadcast = summed.first(where: { label in zip([a, b], operands).contains { $0.0.contains(label) && $0.1.shape[$0.0.firstIndex(of: label)!] != extents[label] } }) {
                throw compiler.shapeError(node, "summed label \(parsed.name(broadcast)) has different extents in the two operands")
            }
            let left = arranged(0, batch + rows + summed), right = arranged(1, batch + summed + columns)
            let (m, k, n) = (shapeOf(rows).reduce(1, *), shapeOf(summed).reduce(1, *), shapeOf(columns).reduce(1, *))
            // Each batch index's matrices, a batch axis of extent 1 in an operand read for every index.
            let batchShape = shapeOf(batch), batchStrides = strides(of: batchShape)
            let operandBatches = [a, b].enumerated().map { index, term in batch.map { operands[index].shape[term.firstIndex(of: $0)!] } }
            let offsets = (0..<batchShape.reduce(1, *)).map { position -> (a: Int, b: Int) in
                let index = batch.indices.map { position / batchStrides[$0] % batchShape[$0] }
                let flat = operandBatches.map { extents in zip(index, extents).reduce(0) { $0 * $1.1 + ($1.1 == 1 ? 0 : $1.0) } }
                return (flat[0] * m * k, flat[1] * k * n)
            }
            finish(batch + rows + columns, product: MatMulKernel(m: m, n: n, k: k, batchOffsets: offsets, bias: nil), inputs: [left, right])
        }
        return KernelPlan(kernel: EinsumKernel(stages: stages, valueFloats: floats), operands: operands, outputShape: outputShape)
    }
}

/// An Einsum equation's labels as integers: letters by their code, the axes "..." stands for as
/// -1, -2, ... counted from the right (so they broadcast as NumPy aligns them).
struct EinsumEquation {
    let terms: [[Int]]
    let output: [Int]

    init(_ text: String, ranks: [Int], node: Node, compiler: Compiler) throws(InferenceError) {
        let equation = text.filter { !$0.isWhitespace }
        let sides = equation.components(separatedBy: "->")
        guard sides.count <= 2 else { throw compiler.fail(node, "equation '\(text)' has more than one '->'") }
        let written = sides[0].components(separatedBy: ",")
        var terms: [[Int]] = []
        for (index, term) in written.enumerated() {
            let rank = index < ranks.count ? ranks[index] : 0
            terms.append(try Self.labels(term, rank: rank, text: text, node: node, compiler: compiler))
            if Set(terms[index]).count != terms[index].count {
                throw compiler.fail(node, "operand '\(term)' repeats a label (a diagonal); Einsum without repeated labels is supported")
            }
        }
        let ellipsis = (terms.flatMap { $0 }.filter { $0 < 0 }.min() ?? 0)
        if sides.count == 2 {
            output = try Self.labels(sides[1], rank: sides[1].contains("...") ? sides[1].count - 3 - ellipsis : sides[1].count,
                                     text: text, node: node, compiler: compiler)
        } else {
            // Implicit output: the broadcast axes, then the labels used once, in alphabetical order.
            let all = terms.flatMap { $0 }
            output = Array(stride(from: ellipsis, to: 0, by: 1)) + Set(all.filter { $0 > 0 && all.firstIndex(of: $0) == all.lastIndex(of: $0) }).sorted()
        }
        guard Set(output).count == output.count else { throw compiler.fail(node, "equation '\(text)' repeats an output label") }
        if let missing = output.first(where: { label in !terms.contains { $0.contains(label) } }) {
            throw compiler.shapeError(node, "output label \(Self.name(missing)) is in no operand of '\(text)'")
        }
        self.terms = terms
    }

    /// A term's labels for an operand of `rank` axes.
    private static func labels(_ term: String, rank: Int, text: String, node: Node, compiler: Compiler) throws(InferenceError) -> [Int] {
        let parts = term.components(separatedBy: "...")
        guard parts.count <= 2, term.replacingOccurrences(of: "...", with: "").allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw compiler.fail(node, "equation '\(text)': term '\(term)' is not letters with at most one '...'")
        }
        let letters = parts.map { $0.unicodeScalars.map { Int($0.value) } }
        if parts.count == 1 {
            guard letters[0].count == rank else { throw compiler.shapeError(node, "term '\(term)' of '\(text)' names \(letters[0].count) axes of \(rank)") }
            return letters[0]
        }
        let broadcast = rank - letters[0].count - letters[1].count
        guard broadcast >= 0 else { throw compiler.shapeError(node, "term '\(term)' of '\(text)' names more axes than its operand's \(rank)") }
        return letters[0] + (0..<broadcast).map { -(broadcast - $0) } + letters[1]
    }

    /// A label as written ("b", or "...[1]" for a broadcast axis).
    func name(_ label: Int) -> String { Self.name(label) }

    static func name(_ label: Int) -> String {
        label > 0 ? String(UnicodeScalar(UInt8(label))) : "...[\(-label)]"
    }
}
