/// Transposes pushed down through operators that work the same in any layout, and cancelled in
/// pairs. tf2onnx leaves every convolution of a Keras model in an NHWC island: Transpose to NHWC,
/// elementwise work (batch norm as Mul and Add, activations, residual Adds, squeeze-excitation's
/// ReduceMean), Transpose back to NCHW for the next convolution. Pushed down, the first Transpose
/// meets the second and both vanish: the elementwise work runs on NCHW values, next to the
/// convolutions that the later passes fold it into.
extension GraphPasses {
    /// A node of `graph` whose data inputs are all one Transpose's output (or constants) becomes
    /// the same node on the Transpose's input, followed by the Transpose; a Transpose of a
    /// Transpose becomes one (or none, when they cancel). Nodes are visited in order, so a
    /// Transpose moves down a chain one node at a time. Those left without readers are dropped
    /// by removeDeadNodes.
    static func pushTransposes(_ graph: inout Graph) {
        var nodes: [Node] = []
        // Values made by a Transpose in `nodes`: its input and permutation.
        var transposes: [String: (source: String, perm: [Int])] = [:]
        var renamed: [String: String] = [:]
        let graphOutputs = Set(graph.outputs)
        for var node in graph.nodes {
            node.inputs = node.inputs.map { renamed[$0] ?? $0 }
            // Only a true permutation is followed (a malformed one fails where it is compiled).
            if node.op == "Transpose", let input = node.input(0), let perm = node.ints("perm"), perm.sorted() == Array(perm.indices) {
                guard let inner = transposes[input], inner.perm.count == perm.count else {
                    transposes[node.outputs[0]] = (input, perm)
                    nodes.append(node)
                    continue
                }
                let composed = perm.map { inner.perm[$0] }
                if composed == Array(composed.indices) {
                    // The pair cancels: readers take the inner Transpose's input.
                    if graphOutputs.contains(node.outputs[0]) {
                        nodes.append(Node(name: node.name, op: "Identity", inputs: [inner.source], outputs: node.outputs, attributes: [:]))
                    } else {
                        renamed[node.outputs[0]] = inner.source
                    }
                    continue
                }
                node.inputs = [inner.source]
                node.attributes["perm"] = .ints(composed)
                transposes[node.outputs[0]] = (inner.source, composed)
                nodes.append(node)
                continue
            }
            if let (moved, transpose) = pushed(node, transposes: transposes, constants: &graph.constants) {
                nodes.append(moved)
                nodes.append(transpose)
                transposes[transpose.outputs[0]] = (moved.outputs[0], transpose.ints("perm")!)
                continue
            }
            nodes.append(node)
        }
        graph.nodes = nodes
        removeDeadNodes(&graph)
    }

    /// The node moved before a Transpose that its data inputs share, and that Transpose after
    /// it; nil when the node is not layout-agnostic or its inputs do not allow it.
    private static func pushed(_ node: Node, transposes: [String: (source: String, perm: [Int])],
                               constants: inout [String: Constant]) -> (Node, Node)? {
        guard node.outputs.count == 1 || node.outputs.dropFirst().allSatisfy(\.isEmpty), let data = dataInputs(of: node) else { return nil }
        let perms = data.compactMap { node.input($0).flatMap { transposes[$0]?.perm } }
        guard let perm = perms.first, perms.allSatisfy({ $0 == perm }) else { return nil }
        let rank = perm.count
        var inverse = [Int](repeating: 0, count: rank)
        for (k, axis) in perm.enumerated() { inverse[axis] = k }
        var moved = node
        // Constants made for the moved node, kept only if it moves.
        var made: [String: Constant] = [:]
        for index in data {
            guard let name = node.input(index) else { continue }
            if let transpose = transposes[name] {
                moved.inputs[index] = transpose.source
            } else if let constant = constants[name], constant.shape.count <= rank {
                // A constant broadcast against the transposed value: padded to its rank, permuted back.
                guard constant.shape.count > 0, constant.shape.reduce(1, *) != 1 else { continue }
                let padded = constant.reshaped([Int](repeating: 1, count: rank - constant.shape.count) + constant.shape)
                let key = "\(name)#untransposed\(perm)"
                made[key] = padded.transposed(inverse)
                moved.inputs[index] = key
            } else {
                return nil
            }
        }
        // Axis arguments follow the permutation: axis k of the transposed value is axis perm[k].
        func axis(_ value: Int) -> Int? { value >= -rank && value < rank ? perm[value < 0 ? value + rank : value] : nil }
        switch node.op {
        case "Concat":
            guard data.allSatisfy({ node.input($0).map { transposes[$0] != nil || constants[$0]?.shape.count == rank } ?? true }),
                  let newAxis = axis(node.int("axis", default: 0)) else { return nil }
            moved.attributes["axis"] = .int(newAxis)
        case _ where ReduceKernel.Mode.byOperator[node.op] != nil:
            guard node.int("keepdims", default: 1) == 1 else { return nil }
            if let axes = node.ints("axes") {
                let mapped = axes.compactMap(axis)
                guard mapped.count == axes.count else { return nil }
                moved.attributes["axes"] = .ints(mapped)
            } else if let name = node.input(1) {
                guard let axes = constants[name]?.integers else { return nil }
                let mapped = axes.compactMap(axis)
                guard mapped.count == axes.count else { return nil }
                moved.inputs[1] = "\(name)#untransposed\(perm)"
                made[moved.inputs[1]] = .int64(shape: [mapped.count], values: mapped.map { Int64($0) })
            }
        case "LayerNormalization":
            // The normalised axes, moved by the permutation, must stay neighbours in their order.
            let given = node.int("axis", default: -1), start = given < 0 ? given + rank : given
            guard start >= 0 && start < rank else { return nil }
            let axes = node.ints(IRAttribute.normalizedAxes) ?? Array(start..<rank)
            let mapped = axes.compactMap(axis)
            guard mapped.count == axes.count, let first = mapped.first, mapped == Array(first..<(first + mapped.count)) else { return nil }
            moved.attributes[IRAttribute.normalizedAxes] = .ints(mapped)
        case "Pad":
            guard node.input(3) == nil, let name = node.input(1), let pads = constants[name]?.integers, pads.count == 2 * rank else { return nil }
            var permuted = pads
            for k in 0..<rank {
                permuted[perm[k]] = pads[k]
                permuted[perm[k] + rank] = pads[k + rank]
            }
            moved.inputs[1] = "\(name)#untransposed\(perm)"
            made[moved.inputs[1]] = .int64(shape: [2 * rank], values: permuted.map { Int64($0) })
        default:
            break
        }
        constants.merge(made) { _, new in new }
        let output = node.outputs[0], untransposed = "\(output)#untransposed"
        moved.outputs[0] = untransposed
        let transpose = Node(name: "\(node.name)#transpose", op: "Transpose", inputs: [untransposed], outputs: [output],
                             attributes: ["perm": .ints(perm)])
        return (moved, transpose)
    }

    /// Which inputs of a layout-agnostic node carry data (the rest are bounds, pads, axes that
    /// must be constants); nil for any other node.
    private static func dataInputs(of node: Node) -> [Int]? {
        switch node.op {
        case "Clip": return [0]
        case _ where Activation.operators.contains(node.op): return node.inputs.count == 1 ? [0] : nil
        case "Identity": return [0]
        case _ where BinaryKernel.Operation.byOperator[node.op] != nil: return Array(node.inputs.indices)
        case "Concat": return Array(node.inputs.indices)
        case _ where ReduceKernel.Mode.byOperator[node.op] != nil: return [0]
        case "Pad", "LayerNormalization": return [0]
        default: return nil
        }
    }
}
