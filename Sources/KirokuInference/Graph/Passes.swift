import Foundation

/// Load-time graph rewrites. Each keeps the graph's outputs identical (up to float rounding).
enum GraphPasses {
    /// The attribute that carries an activation fused into a Conv.
    static let fusedActivation = "kiroku.activation"

    /// All passes, in order.
    static func optimize(_ graph: inout Graph) {
        lowerToIntegerOperators(&graph)
        foldConstantDequantize(&graph)
        fuseQuantizeDequantize(&graph)
        pushTransposes(&graph)
        foldBatchNormIntoConv(&graph)
        recogniseActivations(&graph)
        recogniseLayerNorms(&graph)
        recogniseMomentLayerNorms(&graph)
        foldChannelArithmeticIntoConv(&graph)
        foldBiasIntoMatMul(&graph)
        fuseActivationsIntoConv(&graph)
        poolAfterPointwise(&graph)
        removeDeadNodes(&graph)
    }

    /// The attribute that lists the axes a LayerNormalization normalises, where a pass moved them
    /// off the trailing ones (a run of neighbours; ONNX's operator has only `axis`, to the end).
    static let normalizedAxes = "kiroku.normalizedAxes"

    /// The attribute that marks a convolution to run on channel-blocked data (see channelBlockedChains).
    static let channelBlocked = "kiroku.channelBlocked"

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
            if pointwiseWeights(node, graph) != nil { return weights.shape[1] % 8 == 0 }
            let groups = node.int("group", default: 1)
            return groups == weights.shape[0] && weights.shape[1] == 1
                || groups == 1 && (weights.shape[1] <= BlockedConvolutionPlan.mostChannels || weights.shape[1] % 8 == 0)
                || weights.shape[1] == 8 && weights.shape[0] == 8 * groups  // groups of one block (RegNet)
        }
        let producers = Dictionary(graph.nodes.enumerated().flatMap { index, node in node.outputs.map { ($0, index) } },
                                   uniquingKeysWith: { first, _ in first })
        var readers: [String: [Int]] = [:]
        for (index, node) in graph.nodes.enumerated() { for input in Set(node.inputs) { readers[input, default: []].append(index) } }
        var chosen = Set(graph.nodes.indices.filter { blockable(graph.nodes[$0]) })
        // A Concat along channels of a member's output, or a MaxPool or AveragePool of it, passes the
        // chain on (the compiler keeps it in blocks).
        func inChain(_ index: Int) -> Bool {
            let node = graph.nodes[index]
            let passes = node.op == "Concat" && [1, -3].contains(node.int("axis", default: 0)) || ["MaxPool", "AveragePool"].contains(node.op)
            return chosen.contains(index) || passes && node.inputs.contains { producers[$0].map(inChain) ?? false }
        }
        // Until no member is left without a neighbour in the chain, and siblings (which merge) are in it together.
        while true {
            var kept = chosen.filter { index in
                let node = graph.nodes[index], read = readers[node.outputs[0], default: []]
                return producers[node.inputs[0]].map(inChain) ?? false || (!read.isEmpty && read.allSatisfy(inChain))
            }
            for group in siblings where !group.allSatisfy(kept.contains) { kept.subtract(group) }
            if kept == chosen { return chosen }
            chosen = kept
        }
    }

    /// How many times each value is read (by nodes and as a graph output).
    static func readers(_ graph: Graph) -> [String: Int] {
        var counts: [String: Int] = [:]
        for node in graph.nodes { for input in node.inputs where !input.isEmpty { counts[input, default: 0] += 1 } }
        for output in graph.outputs { counts[output, default: 0] += 1 }
        return counts
    }

    /// Conv → BatchNormalization with constant parameters becomes one Conv with scaled weights
    /// and a shifted bias: W' = W·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β.
    static func foldBatchNormIntoConv(_ graph: inout Graph) {
        let readers = readers(graph)
        let producers = Dictionary(graph.nodes.enumerated().flatMap { index, node in node.outputs.map { ($0, index) } },
                                   uniquingKeysWith: { first, _ in first })
        var removed = Set<Int>()
        for (index, bn) in graph.nodes.enumerated() where bn.op == "BatchNormalization" {
            guard bn.outputs.count == 1 || bn.outputs.dropFirst().allSatisfy({ readers[$0, default: 0] == 0 }),
                  let x = bn.input(0), readers[x] == 1, let convIndex = producers[x], !removed.contains(convIndex),
                  graph.nodes[convIndex].op == "Conv",
                  let weightName = graph.nodes[convIndex].input(1),
                  let weights = graph.constants[weightName]?.floatTensor,
                  let gamma = bn.input(1).flatMap({ graph.constants[$0]?.floatTensor }),
                  let beta = bn.input(2).flatMap({ graph.constants[$0]?.floatTensor }),
                  let mean = bn.input(3).flatMap({ graph.constants[$0]?.floatTensor }),
                  let variance = bn.input(4).flatMap({ graph.constants[$0]?.floatTensor }),
                  gamma.count > 0, weights.shape.first == gamma.count,
                  [beta, mean, variance].allSatisfy({ $0.count == gamma.count }) else { continue }
            let conv = graph.nodes[convIndex]
            let bias = conv.input(2).flatMap { graph.constants[$0]?.floatTensor }
            if conv.input(2) != nil && bias == nil { continue }
            let folded = batchNormFolded(weights: weights, bias: bias, gamma: gamma, beta: beta, mean: mean, variance: variance,
                                         epsilon: bn.float("epsilon", default: 1e-5))
            let weightKey = "\(conv.name)#folded_weights", biasKey = "\(conv.name)#folded_bias"
            graph.constants[weightKey] = .float(folded.weights)
            graph.constants[biasKey] = .float(folded.bias)
            graph.nodes[convIndex].inputs = [conv.inputs[0], weightKey, biasKey]
            graph.nodes[convIndex].outputs = [bn.outputs[0]]
            removed.insert(index)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
    }

    /// A convolution's weights [M, ...] and bias [M] (zero when nil) with a batch normalisation of
    /// its M output channels folded in: W' = W·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β.
    static func batchNormFolded(weights: Tensor, bias: Tensor?, gamma: Tensor, beta: Tensor, mean: Tensor, variance: Tensor,
                                epsilon: Float) -> (weights: Tensor, bias: Tensor) {
        let channels = gamma.count, perChannel = weights.count / channels
        var newWeights = weights.data, newBias = [Float](repeating: 0, count: channels)
        for c in 0..<channels {
            let factor = gamma.data[c] / (variance.data[c] + epsilon).squareRoot()
            for i in 0..<perChannel { newWeights[c * perChannel + i] *= factor }
            newBias[c] = ((bias?.data[c] ?? 0) - mean.data[c]) * factor + beta.data[c]
        }
        return (Tensor(shape: weights.shape, data: newWeights), Tensor(shape: [channels], data: newBias))
    }

    /// Conv → activation (read only there) becomes one Conv with the activation in its epilogue.
    static func fuseActivationsIntoConv(_ graph: inout Graph) {
        let readers = readers(graph)
        let producers = Dictionary(graph.nodes.enumerated().flatMap { index, node in node.outputs.map { ($0, index) } },
                                   uniquingKeysWith: { first, _ in first })
        var removed = Set<Int>()
        for (index, node) in graph.nodes.enumerated() {
            guard let activation = Activation.of(node, constants: graph.constants),
                  let x = node.input(0), readers[x] == 1, let convIndex = producers[x], !removed.contains(convIndex),
                  graph.nodes[convIndex].op == "Conv", graph.nodes[convIndex].attributes[fusedActivation] == nil else { continue }
            graph.nodes[convIndex].attributes[fusedActivation] = .activation(activation)
            graph.nodes[convIndex].outputs = [node.outputs[0]]
            removed.insert(index)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
    }

    /// Groups (node indices, in graph order, two or more) of pointwise convolutions (1x1, stride 1,
    /// unpadded, one group, constant weights) that read the same computed input with the same
    /// fused activation: the compiler runs each group as one convolution, weights stacked, whose
    /// output channels the members' outputs are slices of (Compiler.compileSiblings).
    static func pointwiseSiblings(_ graph: Graph) -> [[Int]] {
        let graphOutputs = Set(graph.outputs)
        func eligible(_ node: Node) -> Bool {
            pointwiseWeights(node, graph) != nil && graph.constants[node.inputs[0]] == nil && !graphOutputs.contains(node.outputs[0])
        }
        func inChannels(_ node: Node) -> Int? { node.input(1).flatMap { graph.constants[$0]?.floatTensor?.shape[1] } }
        var groups: [[Int]] = []
        for (index, node) in graph.nodes.enumerated() where eligible(node) {
            if let g = groups.firstIndex(where: { group in
                let first = graph.nodes[group[0]]
                return first.inputs[0] == node.inputs[0] && first.attributes[fusedActivation] == node.attributes[fusedActivation]
                    && inChannels(first) == inChannels(node)
            }) {
                groups[g].append(index)
            } else {
                groups.append([index])
            }
        }
        return groups.filter { $0.count > 1 }
    }

    /// The weights [out, in, 1, 1] of a pointwise convolution (1x1, stride 1, unpadded, one group,
    /// constant weights, a constant bias of one value per output channel if any), whose every
    /// attribute is the default or means it; nil for any other node (it stays as it is, to compile
    /// or fail on its own).
    static func pointwiseWeights(_ node: Node, _ graph: Graph) -> Tensor? {
        let ones = { (key: String) in (node.ints(key) ?? []).allSatisfy { $0 == 1 } }
        guard node.op == "Conv", node.input(0) != nil, node.int("group", default: 1) == 1, node.outputs.count == 1,
              ones("strides"), ones("dilations"), ones("kernel_shape"), (node.ints("pads") ?? []).allSatisfy({ $0 == 0 }),
              ["NOTSET", "VALID"].contains(node.string("auto_pad", default: "NOTSET")),
              let weights = node.input(1).flatMap({ graph.constants[$0]?.floatTensor }),
              weights.shape.count == 4, weights.shape[2] == 1, weights.shape[3] == 1,
              node.input(2).map({ graph.constants[$0]?.floatTensor?.count == weights.shape[0] }) ?? true else { return nil }
        return weights
    }

    /// AveragePool → pointwise Conv (the pool's only reader) becomes the Conv, without its bias and
    /// activation, then the AveragePool, which adds them (see PoolingKernel): both are linear, one
    /// over positions per channel, the other over channels per position, so they commute, and the
    /// averages then run over the Conv's output channels where it has fewer (InceptionV3's pool
    /// branches: 192 to 2,048 channels in, 32 to 192 out). Only a pool whose output is its input's
    /// size (stride 1, padding kernel - 1 along each axis): the Conv then runs over as many
    /// positions as before.
    static func poolAfterPointwise(_ graph: inout Graph) {
        let readers = readers(graph)
        let readerOf = Dictionary(graph.nodes.enumerated().flatMap { index, node in node.inputs.map { ($0, index) } },
                                  uniquingKeysWith: { first, _ in first })
        for (index, pool) in graph.nodes.enumerated() {
            let ones = { (key: String) in (pool.ints(key) ?? []).allSatisfy { $0 == 1 } }
            guard pool.op == "AveragePool", pool.inputs.count == 1, pool.outputs.count == 1, readers[pool.outputs[0]] == 1,
                  let kernel = pool.ints("kernel_shape"), kernel.count == 2, ones("strides"), ones("dilations"),
                  pool.string("auto_pad", default: "NOTSET") == "NOTSET",
                  let pads = pool.ints("pads"), pads.count == 4, pads[0] + pads[2] == kernel[0] - 1, pads[1] + pads[3] == kernel[1] - 1,
                  let convIndex = readerOf[pool.outputs[0]], convIndex > index, graph.nodes[convIndex].inputs[0] == pool.outputs[0],
                  let weights = pointwiseWeights(graph.nodes[convIndex], graph), weights.shape[0] < weights.shape[1] else { continue }
            var conv = graph.nodes[convIndex], pooled = pool
            let unpooled = "\(conv.outputs[0])#unpooled"
            pooled.inputs = [unpooled] + [conv.input(2)].compactMap { $0 }
            pooled.outputs = conv.outputs
            pooled.attributes[fusedActivation] = conv.attributes[fusedActivation]
            conv.inputs = [pool.inputs[0], conv.inputs[1]]
            conv.outputs = [unpooled]
            conv.attributes[fusedActivation] = nil
            graph.nodes[index] = conv
            graph.nodes[convIndex] = pooled
        }
    }

    /// Drops nodes none of whose outputs reach a graph output.
    static func removeDeadNodes(_ graph: inout Graph) {
        var needed = Set(graph.outputs)
        var kept: [Node] = []
        for node in graph.nodes.reversed() where node.outputs.contains(where: needed.contains) {
            kept.append(node)
            needed.formUnion(node.inputs.filter { !$0.isEmpty })
        }
        graph.nodes = kept.reversed()
    }
}
