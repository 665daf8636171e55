/// Which convolutions the compiler runs together: sibling pointwise convolutions as one, and
/// chains of convolutions on channel-blocked data.
enum ConvolutionGroups {
    /// Groups (node indices, in graph order, two or more) of pointwise convolutions (1x1, stride 1,
    /// unpadded, one group, constant weights) that read the same computed input with the same
    /// fused activation: the compiler runs each group as one convolution, weights stacked, whose
    /// output channels the members' outputs are slices of (Compiler.compileSiblings).
    static func pointwiseSiblings(_ graph: Graph) -> [[Int]] {
        let graphOutputs = Set(graph.outputs)
        func eligible(_ node: Node) -> Bool {
            graph.pointwiseWeights(node) != nil && graph.constants[node.inputs[0]] == nil && !graphOutputs.contains(node.outputs[0])
        }
        func inChannels(_ node: Node) -> Int? { node.input(1).flatMap { graph.constants[$0]?.floatTensor?.shape[1] } }
        var groups: [[Int]] = []
        for (index, node) in graph.nodes.enumerated() where eligible(node) {
            if let g = groups.firstIndex(where: { group in
                let first = graph.nodes[group[0]]
                return first.inputs[0] == node.inputs[0] && first.attributes[IRAttribute.fusedActivation] == node.attributes[IRAttribute.fusedActivation]
                    && inChannels(first) == inChannels(node)
            }) {
                groups[g].append(index)
            } else {
                groups.append([index])
            }
        }
        return groups.filter { $0.count > 1 }
    }

    /// Node indices of the convolutions (constant weights, whole blocks of 8 output channels) that
    /// join a chain of such convolutions: pointwise and ungrouped ones over whole blocks of input
    /// channels, depthwise ones, and stems (an image's few channels). A member's input is made by
    /// one of the chain, or its output is read by the chain alone; a group of `siblings` (which the
    /// compiler merges) joins whole or not at all. The
    /// compiler runs them on channel-blocked data (NCHW8c, see ChannelBlocksKernel) and moves
    /// values between layouts only where a chain starts and ends; a lone one would pay two moves
    /// for its gain. (EfficientNet's and MobileNet's blocks chain from the stem's output to the
    /// head's; InceptionV3's branches chain from their first convolution to their last.)
    static func channelBlockedChains(_ graph: Graph, siblings: [[Int]]) -> Set<Int> {
        func blockable(_ node: Node) -> Bool {
            guard node.op == "Conv", let input = node.input(0), graph.constants[input] == nil, node.outputs.count == 1,
                  let weights = node.input(1).flatMap({ graph.constants[$0]?.floatTensor }), weights.shape.count == 4,
                  weights.shape[0] % 8 == 0 else { return false }
            if graph.pointwiseWeights(node) != nil { return weights.shape[1] % 8 == 0 }
            let groups = node.int("group", default: 1)
            return groups == weights.shape[0] && weights.shape[1] == 1
                || groups == 1 && (weights.shape[1] <= BlockedConvolutionPlan.mostChannels || weights.shape[1] % 8 == 0)
                || groups > 1 && weights.shape[1] % 8 == 0 && (weights.shape[0] / groups) % 8 == 0  // groups of whole blocks (RegNet)
        }
        let producers = graph.producerIndices
        var readers: [String: [Int]] = [:]
        for (index, node) in graph.nodes.enumerated() { for input in Set(node.inputs) { readers[input, default: []].append(index) } }
        var chosen = Set(graph.nodes.indices.filter { blockable(graph.nodes[$0]) })
        // A Concat along channels of a member's output, a MaxPool or AveragePool of it, or a Mul of it
        // by a run-time value (squeeze-excitation's per-channel scale) passes the chain on (the
        // compiler keeps it in blocks where the shapes allow); so does an Add of that and a run-time
        // value (a residual Add, which the compiler runs in the member's store: HRNet's branches,
        // MobileNetV4's and RegNetZ's last expansions had run on planes behind moves), but not an
        // Add of Adds alone (a residual stream on planes, as EdgeNeXt's between its transposes).
        func inChain(_ index: Int) -> Bool {
            let node = graph.nodes[index]
            let passes = node.op == "Concat" && [1, -3].contains(node.int("axis", default: 0)) || ["MaxPool", "AveragePool"].contains(node.op)
                || ["Mul", "Add"].contains(node.op) && node.inputs.count == 2 && node.inputs.allSatisfy { graph.constants[$0] == nil }
            return chosen.contains(index) || passes && node.inputs.contains { input in
                producers[input].map { node.op != "Add" || graph.nodes[$0].op != "Add" ? inChain($0) : false } ?? false
            }
        }
        // A residual Add reads for the chain where its other operand is the chain's too: a member is
        // not its own neighbour through the Add it runs in its store.
        func readsChain(_ reader: Int, from member: Int) -> Bool {
            guard graph.nodes[reader].op == "Add" else { return inChain(reader) }
            return graph.nodes[reader].inputs.contains { input in producers[input].map { $0 != member && inChain($0) } ?? false }
        }
        // Until no member is left without a neighbour in the chain, and siblings (which merge) are in it together.
        while true {
            var kept = chosen.filter { index in
                let node = graph.nodes[index], read = readers[node.outputs[0], default: []]
                return producers[node.inputs[0]].map(inChain) ?? false || (!read.isEmpty && read.allSatisfy { readsChain($0, from: index) })
            }
            for group in siblings where !group.allSatisfy(kept.contains) { kept.subtract(group) }
            if kept == chosen { return chosen }
            chosen = kept
        }
    }
}
