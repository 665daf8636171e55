/// Linear layers over an axis moved last and back: Transpose (axis 1 to the end), MatMul by
/// constant weights, a constant bias Add, activations, more of them, then the Transpose back, as
/// CaiT's talking heads mix its heads (perm [0,2,3,1], 4x4 weights) and MLP-Mixer's token MLP
/// mixes tokens (perm [0,2,1]). They become pointwise convolutions over axis 1 with the same
/// activations between: no transposes (CaiT's 96 took 10.8 of its 73 ms). A rank-3 value goes
/// through a plane of one row ([N, C, L] as [N, C, 1, L]).
extension GraphPasses {
    static func convolveMovedAxisLinears(_ graph: inout Graph) {
        let readerCounts = graph.readerCounts
        var readers: [String: [Int]] = [:]
        for (index, node) in graph.nodes.enumerated() {
            for input in node.inputs where !input.isEmpty { readers[input, default: []].append(index) }
        }
        /// The one node reading `value` (not a graph output, which readerCounts counts).
        func onlyReader(_ value: String) -> Int? { readerCounts[value] == 1 ? readers[value]?.first : nil }
        var replacements: [Int: [Node]] = [:], removed: Set<Int> = [], taken = graph.valueNames
        // (A Transpose back that ended a chain does not start one: its node is replaced.)
        for (start, first) in graph.nodes.enumerated() where first.op == "Transpose" && replacements[start] == nil {
            guard let perm = first.ints("perm"), [3, 4].contains(perm.count), perm == [0] + Array(2..<perm.count) + [1],
                  let x = first.input(0), let (chain, end) = linearChain(graph, from: first.outputs[0], back: [0, perm.count - 1] + Array(1..<perm.count - 1),
                                                                       onlyReader: onlyReader) else { continue }
            // New values are named after values (one producer each), and only where no name is taken.
            let (from, output) = (first.outputs[0], graph.nodes[end].outputs[0])
            let names = (perm.count == 3 ? ["\(from)#planes", "\(from)#plane", "\(output)#rows", "\(output)#plane"] : [])
                + chain.filter { graph.nodes[$0].op == "MatMul" }.flatMap { ["\(graph.nodes[$0].outputs[0])#weights", "\(graph.nodes[$0].outputs[0])#bias"] }
            guard taken.isDisjoint(with: names) else { continue }
            taken.formUnion(names)
            replacements[end] = convolutions(&graph, x: x, chain: chain, from: from, output: output, rank: perm.count)
            removed.formUnion([start] + chain)
        }
        guard !replacements.isEmpty else { return }
        graph.nodes = graph.nodes.enumerated().flatMap { index, node in
            replacements[index] ?? (removed.contains(index) ? [] : [node])
        }
    }

    /// The nodes after `value` up to a Transpose of permutation `back`, each the only reader of the
    /// value before it: MatMuls by constant 2-D weights (the first of their width, each then of the
    /// last's), each perhaps followed by an Add of one constant per column (its bias), and
    /// activations of constant parameters; nil unless the chain has a MatMul and ends at that Transpose.
    private static func linearChain(_ graph: Graph, from value: String, back: [Int], onlyReader: (String) -> Int?)
        -> (chain: [Int], end: Int)? {
        var chain: [Int] = [], value = value, width: Int? = nil, afterProduct = false
        while let next = onlyReader(value) {
            let node = graph.nodes[next]
            if node.op == "Transpose" {
                return node.ints("perm") == back && width != nil ? (chain, next) : nil
            }
            guard node.outputs.count == 1, node.inputs.first == value || node.op == "Add" else { return nil }
            switch node.op {
            case "MatMul":
                guard node.inputs.count == 2, let w = graph.constants[node.inputs[1]]?.floatTensor, w.shape.count == 2,
                      width == nil || width == w.shape[0] else { return nil }
                width = w.shape[1]
            case "Add":
                guard afterProduct, let width, node.inputs.count == 2, node.inputs.contains(value),
                      let bias = graph.constants[node.inputs[0] == value ? node.inputs[1] : node.inputs[0]]?.floatTensor,
                      bias.count == width, bias.shape.last == width else { return nil }
            default:
                guard Activation.operators.contains(node.op), Activation.of(node, constants: graph.constants) != nil,
                      node.inputs.dropFirst().allSatisfy({ $0.isEmpty || graph.constants[$0] != nil }) else { return nil }
            }
            afterProduct = node.op == "MatMul"
            chain.append(next)
            value = node.outputs[0]
        }
        return nil
    }

    /// The chain as pointwise convolutions (each MatMul with the Add after it as its bias) and
    /// activations on `x` over axis 1, writing `output`; through a plane of one row for rank 3.
    private static func convolutions(_ graph: inout Graph, x: String, chain: [Int], from: String, output: String, rank: Int) -> [Node] {
        var nodes: [Node] = [], current = x
        if rank == 3 {
            graph.constants["\(from)#planes"] = .int64(shape: [4], values: [0, 0, 1, -1])
            nodes.append(Node(name: "\(from)#planes", op: "Reshape", inputs: [x, "\(from)#planes"], outputs: ["\(from)#plane"], attributes: [:]))
            current = "\(from)#plane"
        }
        var position = 0
        while position < chain.count {
            var node = graph.nodes[chain[position]]
            position += 1
            if node.op == "MatMul", let w = graph.constants[node.inputs[1]]?.floatTensor {
                let (inputs, width) = (w.shape[0], w.shape[1])
                // Weights [in, out] as [out, in, 1, 1].
                let weights = (0..<width * inputs).map { w.data[($0 % inputs) * width + $0 / inputs] }
                let product = node.outputs[0]
                graph.constants["\(product)#weights"] = .float(Tensor(shape: [width, inputs, 1, 1], data: weights))
                var conv = Node(name: node.name, op: "Conv", inputs: [current, "\(product)#weights"], outputs: node.outputs, attributes: [:])
                if position < chain.count, case let add = graph.nodes[chain[position]], add.op == "Add" {
                    let bias = add.inputs[0] == product ? add.inputs[1] : add.inputs[0]
                    graph.constants["\(product)#bias"] = .float(Tensor(shape: [width], data: graph.constants[bias]!.floatTensor!.data))
                    conv.inputs.append("\(product)#bias")
                    conv.outputs = add.outputs
                    position += 1
                }
                node = conv
            } else {
                node.inputs[0] = current
            }
            current = node.outputs[0]
            nodes.append(node)
        }
        if rank == 3 {
            let rows = "\(output)#rows"
            graph.constants[rows] = .int64(shape: [3], values: [0, 0, -1])
            nodes[nodes.count - 1].outputs[0] = "\(output)#plane"
            nodes.append(Node(name: rows, op: "Reshape", inputs: ["\(output)#plane", rows], outputs: [output], attributes: [:]))
        } else {
            nodes[nodes.count - 1].outputs[0] = output
        }
        return nodes
    }
}
