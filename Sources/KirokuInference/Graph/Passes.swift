import Foundation

/// Load-time graph rewrites. Each keeps the graph's outputs identical (up to float rounding).
enum GraphPasses {
    /// All passes, in order.
    /// The rewrites in order; `floatLayers` names the quantized layers (Conv, Gemm, MatMul or Add
    /// nodes) left on float kernels, which then compute on float activations.
    static func optimize(_ graph: inout Graph, floatLayers: Set<String> = []) {
        splitVariadicOperators(&graph)
        forwardConstantIdentities(&graph)
        dropExpandsToOperandShape(&graph)
        lowerToIntegerOperators(&graph, floatLayers: floatLayers)
        foldConstantDequantize(&graph)
        convolutionsOverRows(&graph)
        fuseQuantizeDequantize(&graph, rounding: floatLayers.isEmpty)
        pushTransposes(&graph)
        foldBatchNormIntoConv(&graph)
        foldBatchNormIntoLinear(&graph)
        recogniseActivations(&graph)
        recogniseLayerNorms(&graph)
        recogniseMomentLayerNorms(&graph)
        convolveMovedAxisLinears(&graph)
        moveAffineBeforeRelu(&graph)
        foldChannelArithmeticIntoConv(&graph)
        mergeParallelBranches(&graph)
        foldBiasIntoMatMul(&graph)
        fuseActivationsIntoConv(&graph)
        poolAfterPointwise(&graph)
        removeDeadNodes(&graph)
    }

    /// Conv → BatchNormalization with constant parameters becomes one Conv with scaled weights
    /// and a shifted bias: W' = W·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β.
    static func foldBatchNormIntoConv(_ graph: inout Graph) {
        let readers = graph.readerCounts
        let producers = graph.producerIndices
        var removed = Set<Int>()
        for (index, bn) in graph.nodes.enumerated() where bn.op == "BatchNormalization" && !bn.inTrainingMode {
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

    /// A Linear layer batch-normalised (LeViT's Linear + BatchNorm1d): MatMul by constant weights
    /// [K, C] → Flatten (the columns stay the last axis) → BatchNormalization over the C columns, or
    /// Gemm → BatchNormalization, each value read only by the next: the weights' columns scaled and
    /// the shift a bias (MatMul's third input, Gemm's C).
    static func foldBatchNormIntoLinear(_ graph: inout Graph) {
        let readers = graph.readerCounts, producers = graph.producerIndices
        // A Shape node reads only the shape, which the fold keeps (LeViT's reshape_as reads the MatMul's).
        var shapeReaders: [String: Int] = [:]
        for node in graph.nodes where node.op == "Shape" { shapeReaders[node.inputs[0], default: 0] += 1 }
        var removed = Set<Int>()
        for (index, bn) in graph.nodes.enumerated() where bn.op == "BatchNormalization" && !bn.inTrainingMode {
            guard bn.outputs.count == 1 || bn.outputs.dropFirst().allSatisfy({ readers[$0, default: 0] == 0 }),
                  let x = bn.input(0), readers[x] == 1, let producer = producers[x] else { continue }
            var linearIndex = producer, flatten: Int?
            if graph.nodes[producer].op == "Flatten", let source = graph.nodes[producer].input(0),
               readers[source, default: 0] - shapeReaders[source, default: 0] == 1,
               let matmul = producers[source], graph.nodes[matmul].op == "MatMul", graph.nodes[matmul].inputs.count == 2 {
                (linearIndex, flatten) = (matmul, producer)
            }
            let linear = graph.nodes[linearIndex]
            let gemm = linear.op == "Gemm", transposed = gemm && linear.int("transB", default: 0) == 1
            guard !removed.contains(linearIndex), flatten != nil || gemm && linear.float("beta", default: 1) == 1 && linear.int("transA", default: 0) == 0,
                  let weights = linear.input(1).flatMap({ graph.constants[$0]?.floatTensor }), weights.shape.count == 2,
                  let gamma = bn.input(1).flatMap({ graph.constants[$0]?.floatTensor }),
                  let beta = bn.input(2).flatMap({ graph.constants[$0]?.floatTensor }),
                  let mean = bn.input(3).flatMap({ graph.constants[$0]?.floatTensor }),
                  let variance = bn.input(4).flatMap({ graph.constants[$0]?.floatTensor }),
                  weights.shape[transposed ? 0 : 1] == gamma.count, [beta, mean, variance].allSatisfy({ $0.count == gamma.count }) else { continue }
            let bias = linear.input(2).flatMap { graph.constants[$0]?.floatTensor }
            if linear.input(2) != nil && bias?.count != gamma.count { continue }
            // Output channels first, as batchNormFolded takes them.
            let rows = transposed ? weights : Constant.float(weights).transposed([1, 0]).floatTensor!
            let folded = batchNormFolded(weights: rows, bias: bias, gamma: gamma, beta: beta, mean: mean, variance: variance,
                                         epsilon: bn.float("epsilon", default: 1e-5))
            let weightKey = "\(linear.name)#folded_weights", biasKey = "\(linear.name)#folded_bias"
            graph.constants[weightKey] = .float(transposed ? folded.weights : Constant.float(folded.weights).transposed([1, 0]).floatTensor!)
            graph.constants[biasKey] = .float(folded.bias)
            graph.nodes[linearIndex].inputs = [linear.inputs[0], weightKey, biasKey]
            graph.nodes[flatten ?? linearIndex].outputs = [bn.outputs[0]]
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
        let readers = graph.readerCounts
        let producers = graph.producerIndices
        var removed = Set<Int>()
        for (index, node) in graph.nodes.enumerated() {
            guard let activation = Activation.of(node, constants: graph.constants),
                  let x = node.input(0), readers[x] == 1, let convIndex = producers[x], !removed.contains(convIndex),
                  graph.nodes[convIndex].op == "Conv", graph.nodes[convIndex].attributes[IRAttribute.fusedActivation] == nil else { continue }
            graph.nodes[convIndex].attributes[IRAttribute.fusedActivation] = .activation(activation)
            graph.nodes[convIndex].outputs = [node.outputs[0]]
            removed.insert(index)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
    }

    /// AveragePool → pointwise Conv (the pool's only reader) becomes the Conv, without its bias and
    /// activation, then the AveragePool, which adds them (see PoolingKernel): both are linear, one
    /// over positions per channel, the other over channels per position, so they commute, and the
    /// averages then run over the Conv's output channels where it has fewer (InceptionV3's pool
    /// branches: 192 to 2,048 channels in, 32 to 192 out). Only a pool whose output is its input's
    /// size (stride 1, padding kernel - 1 along each axis): the Conv then runs over as many
    /// positions as before.
    static func poolAfterPointwise(_ graph: inout Graph) {
        let readers = graph.readerCounts
        let readerOf = Dictionary(graph.nodes.enumerated().flatMap { index, node in node.inputs.map { ($0, index) } },
                                  uniquingKeysWith: { first, _ in first })
        for (index, pool) in graph.nodes.enumerated() {
            let ones = { (key: String) in (pool.ints(key) ?? []).allSatisfy { $0 == 1 } }
            guard pool.op == "AveragePool", pool.inputs.count == 1, pool.outputs.count == 1, readers[pool.outputs[0]] == 1,
                  let kernel = pool.ints("kernel_shape"), kernel.count == 2, ones("strides"), ones("dilations"),
                  pool.string("auto_pad", default: "NOTSET") == "NOTSET",
                  let pads = pool.ints("pads"), pads.count == 4, pads[0] + pads[2] == kernel[0] - 1, pads[1] + pads[3] == kernel[1] - 1,
                  let convIndex = readerOf[pool.outputs[0]], convIndex > index, graph.nodes[convIndex].inputs[0] == pool.outputs[0],
                  let weights = graph.pointwiseWeights(graph.nodes[convIndex]), weights.shape[0] < weights.shape[1] else { continue }
            var conv = graph.nodes[convIndex], pooled = pool
            let unpooled = "\(conv.outputs[0])#unpooled"
            pooled.inputs = [unpooled] + [conv.input(2)].compactMap { $0 }
            pooled.outputs = conv.outputs
            pooled.attributes[IRAttribute.fusedActivation] = conv.attributes[IRAttribute.fusedActivation]
            conv.inputs = [pool.inputs[0], conv.inputs[1]]
            conv.outputs = [unpooled]
            conv.attributes[IRAttribute.fusedActivation] = nil
            graph.nodes[index] = conv
            graph.nodes[convIndex] = pooled
        }
    }

    /// An Identity of a constant is that constant: TorchScript's exporter reads shared weights and
    /// biases through Identity nodes (Swin's Linear biases), which would hide them from the passes
    /// that fold constants into the operators reading them.
    static func forwardConstantIdentities(_ graph: inout Graph) {
        for node in graph.nodes where node.op == "Identity" {
            guard let input = node.input(0), let constant = graph.constants[input], let output = node.outputs.first,
                  !graph.outputs.contains(output) else { continue }
            graph.constants[output] = constant
        }
        graph.nodes.removeAll { $0.op == "Identity" && $0.outputs.first.map { graph.constants[$0] != nil } ?? false }
    }

    /// A broadcasting binary operator reading Expand(y, Shape(x)) beside x reads y itself: the
    /// operator broadcasts y to x's shape as the Expand would (PyTorch's expand_as, as in
    /// F.normalize's x / norm.expand_as(x): Swin V2's attention materialised 24 such copies).
    static func dropExpandsToOperandShape(_ graph: inout Graph) {
        let readers = graph.readerCounts, producers = graph.producerIndices
        for index in graph.nodes.indices where BinaryKernel.Operation.byOperator[graph.nodes[index].op] != nil {
            let node = graph.nodes[index]
            guard node.inputs.count == 2 else { continue }
            for side in 0..<2 {
                guard let expand = producers[node.inputs[side]].map({ graph.nodes[$0] }), expand.op == "Expand",
                      readers[node.inputs[side]] == 1, let shape = expand.input(1).flatMap({ producers[$0] }).map({ graph.nodes[$0] }),
                      shape.op == "Shape", shape.attributes["start"] == nil, shape.attributes["end"] == nil,
                      shape.input(0) == node.inputs[1 - side], let source = expand.input(0) else { continue }
                graph.nodes[index].inputs[side] = source
            }
        }
    }

    /// The variadic Sum, Mean, Max and Min (tf2onnx writes Keras' AddN as Sum) as chains of their
    /// two-input operators (Add for Sum and Mean, Mean's total then scaled by 1/n); of one input, an Identity.
    static func splitVariadicOperators(_ graph: inout Graph) {
        let binary = ["Sum": "Add", "Mean": "Add", "Max": "Max", "Min": "Min"]
        graph.nodes = graph.nodes.flatMap { node -> [Node] in
            guard let op = binary[node.op], let output = node.outputs.first, !node.inputs.isEmpty,
                  node.inputs.count != 2 || node.op == "Sum" || node.op == "Mean" else { return [node] }
            var chain: [Node] = []
            var total = node.inputs[0]
            for (index, input) in node.inputs.enumerated().dropFirst() {
                let result = index == node.inputs.count - 1 && node.op != "Mean" ? output : "\(output)#\(index)"
                chain.append(Node(name: "\(node.name)#\(index)", op: op, inputs: [total, input], outputs: [result], attributes: [:]))
                total = result
            }
            if node.op == "Mean" {
                let scale = "\(node.name)#1/n"
                graph.constants[scale] = .float(Tensor(shape: [], data: [1 / Float(node.inputs.count)]))
                chain.append(Node(name: "\(node.name)#mean", op: "Mul", inputs: [total, scale], outputs: [output], attributes: [:]))
            } else if chain.isEmpty {
                chain.append(Node(name: node.name, op: "Identity", inputs: [total], outputs: [output], attributes: [:]))
            }
            return chain
        }
    }

    /// A 1-D Conv (weights [O, I, K] known at load, input [N, C, L]) or 1-D pooling (AveragePool
    /// or MaxPool of a one-element kernel_shape) as a 2-D one over a plane of one row:
    /// Unsqueeze to [N, C, 1, L], the node with weights [O, I, 1, K] and its window's attributes
    /// given a height of 1, then Squeeze back to [N, O, L'] (ECA-Net's channel attention, Next-ViT's
    /// token pooling). An input of another rank then fails at the node, as the 1-D one would; a node
    /// whose attributes are not one-dimensional, or whose new names are taken, is left as it is.
    static func convolutionsOverRows(_ graph: inout Graph) {
        var taken = graph.valueNames
        graph.nodes = graph.nodes.flatMap { node -> [Node] in
            let weights = node.op == "Conv" ? node.input(1).flatMap({ graph.constants[$0]?.floatTensor }) : nil
            let pooling = ["AveragePool", "MaxPool"].contains(node.op) && node.outputs.dropFirst().allSatisfy(\.isEmpty)
            guard let x = node.input(0), let output = node.outputs.first, weights?.shape.count == 3 || pooling,
                  (node.ints("kernel_shape")?.count ?? (pooling ? 0 : 1)) == 1,
                  ["strides", "dilations"].allSatisfy({ (node.ints($0)?.count ?? 1) == 1 }), (node.ints("pads")?.count ?? 2) == 2
            else { return [node] }
            // Named after the output value (one producer each).
            let (plane, rows, rowWeights) = ("\(output)#input", "\(output)#rows", "\(output)#weights")
            guard taken.isDisjoint(with: [plane, rows, rowWeights]) else { return [node] }
            taken.formUnion([plane, rows, rowWeights])
            var rowNode = node
            (rowNode.inputs[0], rowNode.outputs[0]) = (plane, rows)
            if let weights {
                graph.constants[rowWeights] = .float(Tensor(shape: [weights.shape[0], weights.shape[1], 1, weights.shape[2]], data: weights.data))
                rowNode.inputs[1] = rowWeights
            }
            for key in ["kernel_shape", "strides", "dilations"] {
                if let values = node.ints(key) { rowNode.attributes[key] = .ints([1] + values) }
            }
            if let pads = node.ints("pads") { rowNode.attributes["pads"] = .ints([0, pads[0], 0, pads[1]]) }
            return [Node(name: "\(node.name)#input", op: "Unsqueeze", inputs: [x], outputs: [plane], attributes: ["axes": .ints([2])]), rowNode,
                    Node(name: "\(node.name)#rows", op: "Squeeze", inputs: [rows], outputs: [output], attributes: ["axes": .ints([2])])]
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
