/// Elementwise work folded into the convolution before it or recognised as one activation:
/// what exporters write as chains of small operators (tf2onnx's batch norm as Mul and Add,
/// HardSwish as Add, Clip, Mul, Mul; Swish as Sigmoid and Mul; PyTorch's GELU through Erf).
extension GraphPasses {
    /// Conv → Mul, Div, Add or Sub by a constant of one value per output channel (or one value
    /// in all), the Conv's only reader: the weights and bias absorb it.
    static func foldChannelArithmeticIntoConv(_ graph: inout Graph) {
        var changed = true
        while changed {
            changed = false
            let readers = graph.readerCounts, producers = graph.producerIndices
            for (index, node) in graph.nodes.enumerated() where ["Mul", "Div", "Add", "Sub"].contains(node.op) && node.inputs.count == 2 {
                guard let (convIndex, side) = [0, 1].lazy.compactMap({ side in producers[node.inputs[side]].map { ($0, side) } })
                        .first(where: { graph.nodes[$0.0].op == "Conv" }),
                      readers[node.inputs[side]] == 1, node.op == "Mul" || node.op == "Add" || side == 0,
                      case let conv = graph.nodes[convIndex], conv.attributes[IRAttribute.fusedActivation] == nil,
                      let weights = conv.input(1).flatMap({ graph.constants[$0]?.floatTensor }), weights.shape.count == 4, weights.shape[0] > 0,
                      let values = graph.constants[node.inputs[1 - side]]?.floatTensor,
                      let perChannel = channelValues(values, channels: weights.shape[0]) else { continue }
                // A bias computed at run time (or of another length) cannot absorb anything.
                if let name = conv.input(2), graph.constants[name]?.floatTensor?.count != weights.shape[0] { continue }
                var bias = conv.input(2).flatMap { graph.constants[$0]?.floatTensor?.data } ?? [Float](repeating: 0, count: weights.shape[0])
                var newWeights = weights.data
                let size = weights.count / weights.shape[0]
                for (o, value) in perChannel.enumerated() {
                    switch node.op {
                    case "Mul", "Div":
                        let factor = node.op == "Mul" ? value : 1 / value
                        for i in (o * size)..<((o + 1) * size) { newWeights[i] *= factor }
                        bias[o] *= factor
                    case "Add": bias[o] += value
                    default: bias[o] -= value
                    }
                }
                let weightKey = "\(node.name)#folded_weights", biasKey = "\(node.name)#folded_bias"
                graph.constants[weightKey] = .float(Tensor(shape: weights.shape, data: newWeights))
                graph.constants[biasKey] = .float(Tensor(shape: [bias.count], data: bias))
                graph.nodes[convIndex].inputs = [conv.inputs[0], weightKey, biasKey]
                graph.nodes[convIndex].outputs = node.outputs
                graph.nodes.remove(at: index)
                changed = true
                break
            }
        }
    }

    /// Conv → Relu → Mul by one constant s ≠ 0 → Add of one constant b (HGNetV2's learnable affine
    /// block after each activation; either of Mul and Add may be missing), each read only by the
    /// next: s·relu(z) + b is s·z + b clipped below at b (s > 0) or above (s < 0), so the Mul and Add
    /// move before the activation, which becomes that Clip, and fold into the Conv after this.
    static func moveAffineBeforeRelu(_ graph: inout Graph) {
        // Matches are found on the graph as it is, then rewritten together (each has a Relu of its
        // own, read only by its chain): one pass, whatever the graph's size.
        let chains = ChainLookup(graph)
        var firstReader: [String: Int] = [:]
        for (index, node) in graph.nodes.enumerated() { for input in node.inputs where firstReader[input] == nil { firstReader[input] = index } }
        func scalarSide(_ index: Int) -> (value: Float, side: Int)? {
            let node = graph.nodes[index]
            guard node.inputs.count == 2 else { return nil }
            return (0..<2).lazy.compactMap { side in chains.scalar(node.inputs[1 - side]).map { ($0, side) } }.first
        }
        var rewrites: [(indices: [Int], nodes: [Node], bound: String, value: Float)] = []
        for end in graph.nodes.indices where ["Add", "Mul"].contains(graph.nodes[end].op) {
            // The chain back from `end`: the Add, the Mul, the Relu and their constants.
            var add: (index: Int, b: Float, side: Int)?, mul: (index: Int, s: Float, side: Int)?
            if graph.nodes[end].op == "Add" {
                guard let (b, side) = scalarSide(end) else { continue }
                add = (end, b, side)
                if let producer = chains.producer(graph.nodes[end].inputs[side], "Mul"), let (s, mulSide) = scalarSide(producer.index) {
                    mul = (producer.index, s, mulSide)
                }
            } else {
                guard let (s, side) = scalarSide(end), let output = graph.nodes[end].outputs.first else { continue }
                // A Mul an Add after it takes is handled from that Add.
                if chains.readers[output] == 1, let reader = firstReader[output], graph.nodes[reader].op == "Add", scalarSide(reader) != nil { continue }
                mul = (end, s, side)
            }
            let s = mul?.s ?? 1, b = add?.b ?? 0, first = mul.map { ($0.index, $0.side) } ?? (end, add!.side)
            guard s != 0, let relu = chains.producer(graph.nodes[first.0].inputs[first.1], "Relu"), let z = relu.node.input(0),
                  chains.producer(z, "Conv") != nil, let output = graph.nodes[end].outputs.first else { continue }
            // In the Relu's place the Mul (or the Add) reads z; the Add takes the Mul's place; the Clip the last one's.
            var moved = [mul?.index, add?.index].compactMap { $0 }.map { graph.nodes[$0] }
            moved[0].inputs[first.1] = z
            moved[moved.count - 1].outputs = ["\(output)#affine"]
            let bound = "\(relu.node.name)#bound"
            let clip = Node(name: relu.node.name, op: "Clip", inputs: ["\(output)#affine"] + (s > 0 ? [bound] : ["", bound]), outputs: [output],
                            attributes: [:])
            rewrites.append(([relu.index] + [mul?.index, add?.index].compactMap { $0 }, moved + [clip], bound, b))
        }
        for rewrite in rewrites {
            graph.constants[rewrite.bound] = .float(Tensor(shape: [], data: [rewrite.value]))
            for (index, node) in zip(rewrite.indices, rewrite.nodes) { graph.nodes[index] = node }
        }
    }

    /// MatMul by constant weights [K, N] → Add of a constant [N] (a Linear layer's bias), the
    /// MatMul's only reader: the MatMul starts its sums from the bias (a third input).
    static func foldBiasIntoMatMul(_ graph: inout Graph) {
        let readers = graph.readerCounts, producers = graph.producerIndices
        var removed = Set<Int>()
        for (index, node) in graph.nodes.enumerated() where node.op == "Add" && node.inputs.count == 2 {
            guard let side = [0, 1].first(where: { producers[node.inputs[$0]].map { graph.nodes[$0].op == "MatMul" } ?? false }),
                  readers[node.inputs[side]] == 1, let matmulIndex = producers[node.inputs[side]],
                  case let matmul = graph.nodes[matmulIndex], matmul.inputs.count == 2,
                  let weights = graph.constants[matmul.inputs[1]]?.floatTensor, weights.shape.count == 2,
                  let bias = graph.constants[node.inputs[1 - side]]?.floatTensor, bias.count == weights.shape[1],
                  bias.shape.count <= 2, bias.shape.dropLast().allSatisfy({ $0 == 1 }) else { continue }
            graph.nodes[matmulIndex].inputs.append(node.inputs[1 - side])
            graph.nodes[matmulIndex].outputs = node.outputs
            removed.insert(index)
        }
        graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
    }

    /// A constant's values when it holds one per channel of an NCHW value ([C,1,1] or
    /// [1,C,1,1]; [C] would broadcast along the width) or one in all, of rank at most 4 (a higher
    /// rank would raise the output's); nil otherwise.
    private static func channelValues(_ tensor: Tensor, channels: Int) -> [Float]? {
        guard tensor.shape.count <= 4 else { return nil }
        if tensor.count == 1 { return [Float](repeating: tensor.data[0], count: channels) }
        let padded = [Int](repeating: 1, count: 4 - tensor.shape.count) + tensor.shape
        guard padded.count == 4, padded == [1, channels, 1, 1] else { return nil }
        return tensor.data
    }

    /// Chains of small operators that are one activation: x·Clip(x+3, 0, 6)/6 is HardSwish,
    /// Clip(x+3, 0, 6)/6 HardSigmoid, x·Sigmoid(x) Swish, x·(1+Erf(x/√2))/2 GELU. Each
    /// intermediate value must be read only inside the chain.
    static func recogniseActivations(_ graph: inout Graph) {
        // HardSigmoid alone only once no HardSwish is left to find (its gate is one).
        var changed = true, gates = false
        while changed || !gates {
            if !changed { gates = true }
            changed = false
            let chains = ChainLookup(graph)
            // Clip(x + 3, 0, 6) / 6 (or · 1/6) ending at `end`: the x, and the chain's node indices.
            func hardSigmoid(_ end: (index: Int, node: Node)) -> (x: String, nodes: [Int])? {
                let clipped: String
                if end.node.op == "Mul", end.node.inputs.count == 2, let side = [0, 1].first(where: { ChainLookup.near(chains.scalar(end.node.inputs[$0]), 1.0 / 6) }) {
                    clipped = end.node.inputs[1 - side]
                } else if end.node.op == "Div", end.node.inputs.count == 2, ChainLookup.near(chains.scalar(end.node.inputs[1]), 6) {
                    clipped = end.node.inputs[0]
                } else {
                    return nil
                }
                guard let clip = chains.producer(clipped, "Clip"), clip.node.inputs.count == 3,
                      ChainLookup.near(chains.scalar(clip.node.inputs[1]), 0), ChainLookup.near(chains.scalar(clip.node.inputs[2]), 6),
                      let add = chains.producer(clip.node.inputs[0], "Add"), add.node.inputs.count == 2,
                      let side = [0, 1].first(where: { ChainLookup.near(chains.scalar(add.node.inputs[$0]), 3) }) else { return nil }
                return (add.node.inputs[1 - side], [add.index, clip.index, end.index])
            }
            for (index, node) in graph.nodes.enumerated() {
                var replacement: (op: String, x: String, removed: [Int], attributes: [String: Attribute])?
                if node.op == "Mul", node.inputs.count == 2 {
                    for side in [0, 1] {
                        let x = node.inputs[1 - side], other = node.inputs[side]
                        if let end = chains.producer(other, "Mul") ?? chains.producer(other, "Div"), let gate = hardSigmoid(end), gate.x == x {
                            replacement = ("HardSwish", x, gate.nodes, [:])
                        } else if let sigmoid = chains.producer(other, "Sigmoid"), sigmoid.node.inputs == [x] {
                            replacement = ("Swish", x, [sigmoid.index], ["alpha": .float(1)])
                        }
                        if replacement != nil { break }
                    }
                }
                if replacement == nil, gates, let gate = hardSigmoid((index, node)) {
                    replacement = ("HardSigmoid", gate.x, Array(gate.nodes.dropLast()), ["alpha": .float(1.0 / 6), "beta": .float(0.5)])
                }
                if replacement == nil, let gelu = geluChain(ending: node, chains) {
                    replacement = ("Gelu", gelu.x, gelu.nodes, [:])
                }
                if replacement == nil, let gelu = tanhGeluChain(ending: node, chains) {
                    replacement = ("Gelu", gelu.x, gelu.nodes, ["approximate": .string("tanh")])
                }
                guard let replacement else { continue }
                graph.nodes[index] = Node(name: node.name, op: replacement.op, inputs: [replacement.x], outputs: [node.outputs[0]],
                                          attributes: replacement.attributes)
                graph.nodes = graph.nodes.enumerated().filter { !replacement.removed.contains($0.offset) }.map(\.element)
                changed = true
                break
            }
        }
    }

    /// GELU as torch.onnx.export writes it: (x · (1 + Erf(x / √2))) · 0.5 (TorchScript) or
    /// x · (0.5 · (1 + Erf(x / √2))) (dynamo), ending at `node`: x and the chain's other nodes.
    private static func geluChain(ending node: Node, _ chains: ChainLookup) -> (x: String, nodes: [Int])? {
        // 1 + Erf(x / √2): its x and nodes.
        func erfPlusOne(_ name: String) -> (x: String, nodes: [Int])? {
            guard let add = chains.producer(name, "Add"), add.node.inputs.count == 2,
                  let one = [0, 1].first(where: { ChainLookup.near(chains.scalar(add.node.inputs[$0]), 1) }),
                  let erf = chains.producer(add.node.inputs[1 - one], "Erf"),
                  let div = chains.producer(erf.node.inputs[0], "Div"), div.node.inputs.count == 2,
                  ChainLookup.near(chains.scalar(div.node.inputs[1]), Float(2).squareRoot()) else { return nil }
            return (div.node.inputs[0], [div.index, erf.index, add.index])
        }
        guard node.op == "Mul", node.inputs.count == 2 else { return nil }
        for side in [0, 1] {
            let other = node.inputs[1 - side]
            if ChainLookup.near(chains.scalar(node.inputs[side]), 0.5), let product = chains.producer(other, "Mul"), product.node.inputs.count == 2 {
                for inner in [0, 1] {
                    if let gate = erfPlusOne(product.node.inputs[inner]), gate.x == product.node.inputs[1 - inner] {
                        return (gate.x, gate.nodes + [product.index])
                    }
                }
            }
            if let half = chains.producer(node.inputs[side], "Mul"), half.node.inputs.count == 2 {
                for inner in [0, 1] where ChainLookup.near(chains.scalar(half.node.inputs[inner]), 0.5) {
                    if let gate = erfPlusOne(half.node.inputs[1 - inner]), gate.x == other {
                        return (gate.x, gate.nodes + [half.index])
                    }
                }
            }
        }
        return nil
    }

    /// GELU's tanh form as tf2onnx writes Keras' approximate GELU:
    /// (0.5 · x) · (1 + Tanh(√(2/π) · (x + 0.044715 · x³))), ending at `node`.
    private static func tanhGeluChain(ending node: Node, _ chains: ChainLookup) -> (x: String, nodes: [Int])? {
        // c · y (either side) with c near `value`: y and the node's index.
        func scaled(_ name: String, _ value: Float) -> (y: String, index: Int)? {
            guard let mul = chains.producer(name, "Mul"), mul.node.inputs.count == 2,
                  let side = [0, 1].first(where: { ChainLookup.near(chains.scalar(mul.node.inputs[$0]), value) }) else { return nil }
            return (mul.node.inputs[1 - side], mul.index)
        }
        guard node.op == "Mul", node.inputs.count == 2 else { return nil }
        for side in [0, 1] {
            guard let half = scaled(node.inputs[side], 0.5), let add = chains.producer(node.inputs[1 - side], "Add"), add.node.inputs.count == 2,
                  let one = [0, 1].first(where: { ChainLookup.near(chains.scalar(add.node.inputs[$0]), 1) }),
                  let tanh = chains.producer(add.node.inputs[1 - one], "Tanh"),
                  let inner = scaled(tanh.node.inputs[0], 0.7978846), let sum = chains.producer(inner.y, "Add"), sum.node.inputs.count == 2 else { continue }
            let x = half.y
            guard let cubeSide = [0, 1].first(where: { sum.node.inputs[1 - $0] == x }),
                  let cubic = scaled(sum.node.inputs[cubeSide], 0.044715), let pow = chains.producer(cubic.y, "Pow"),
                  pow.node.inputs.count == 2, pow.node.inputs[0] == x, ChainLookup.near(chains.scalar(pow.node.inputs[1]), 3) else { continue }
            return (x, [half.index, add.index, tanh.index, inner.index, sum.index, cubic.index, pow.index])
        }
        return nil
    }

    /// ReduceMean → Sub → Pow 2 (or Mul by itself) → ReduceMean → Add ε → Sqrt → Div, as
    /// torch.onnx.export writes LayerNorm before opset 17, becomes one LayerNormalization over the
    /// reduced axes (scale 1; the Mul and Add after it stay). Each intermediate value must be read
    /// only inside the chain.
    static func recogniseLayerNorms(_ graph: inout Graph) {
        var changed = true
        while changed {
            changed = false
            let chains = ChainLookup(graph)
            func axes(_ node: Node) -> [Int]? {
                guard node.int("keepdims", default: 1) == 1 else { return nil }
                return node.ints("axes") ?? node.input(1).flatMap { graph.constants[$0]?.integers }
            }
            for (index, div) in graph.nodes.enumerated() where div.op == "Div" && div.inputs.count == 2 {
                let difference = div.inputs[0]
                guard let sqrt = chains.producer(div.inputs[1], "Sqrt"), let add = chains.producer(sqrt.node.inputs[0], "Add"), add.node.inputs.count == 2,
                      let epsilonSide = [0, 1].first(where: { chains.scalar(add.node.inputs[$0]) != nil }),
                      let variance = chains.producer(add.node.inputs[1 - epsilonSide], "ReduceMean"),
                      let square = chains.producer(variance.node.inputs[0], "Pow") ?? chains.producer(variance.node.inputs[0], "Mul"),
                      square.node.inputs.count == 2, square.node.inputs[0] == difference,
                      square.node.op == "Mul" ? square.node.inputs[1] == difference
                          : graph.constants[square.node.inputs[1]]?.floatTensor?.data == [2],
                      let sub = chains.producer(difference, "Sub", readBy: square.node.op == "Mul" ? 3 : 2), sub.node.inputs.count == 2,
                      let mean = chains.producer(sub.node.inputs[1], "ReduceMean"), mean.node.inputs[0] == sub.node.inputs[0],
                      let reduced = axes(mean.node), let first = reduced.min(), reduced.sorted() == Array(first..<(first + reduced.count)),
                      first >= 0 || reduced.allSatisfy({ $0 < 0 }), axes(variance.node) == reduced else { continue }
                let epsilon = chains.scalar(add.node.inputs[epsilonSide])!
                let ones = "\(div.name)#scale"
                graph.constants[ones] = .float(Tensor(shape: [1], data: [1]))
                graph.nodes[index] = Node(name: div.name, op: "LayerNormalization", inputs: [sub.node.inputs[0], ones], outputs: div.outputs,
                                          attributes: ["epsilon": .float(epsilon), IRAttribute.normalizedAxes: .ints(reduced)])
                let removed: Set = [sqrt.index, add.index, variance.index, square.index, sub.index, mean.index]
                graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
                changed = true
                break
            }
        }
    }

    /// tf2onnx's LayerNorm of Keras (Keras' own moments): with m = GlobalAveragePool(x),
    /// g = Reciprocal(Sqrt(GlobalAveragePool((x − m)²) + ε)) · γ, the result x·g + (−m)·g becomes
    /// LayerNormalization over the axes GlobalAveragePool averages (from axis 2 on), then · γ.
    static func recogniseMomentLayerNorms(_ graph: inout Graph) {
        var changed = true
        while changed {
            changed = false
            let chains = ChainLookup(graph)
            // The two inputs of a binary node, in either order, as (the one `first` accepts, the other).
            func sides(_ node: Node, _ first: (String) -> Bool) -> (String, String)? {
                guard node.inputs.count == 2 else { return nil }
                return first(node.inputs[0]) ? (node.inputs[0], node.inputs[1]) : first(node.inputs[1]) ? (node.inputs[1], node.inputs[0]) : nil
            }
            for (index, sum) in graph.nodes.enumerated() where sum.op == "Add" && sum.inputs.count == 2 {
                guard let a = chains.producer(sum.inputs[0], "Mul"), let b = chains.producer(sum.inputs[1], "Mul"),
                      let (negated, gain) = sides(b.node, { chains.producers[$0].map { graph.nodes[$0].op == "Neg" } ?? false }),
                      let (x, gainAgain) = sides(a.node, { $0 != gain }), gainAgain == gain,
                      let neg = chains.producer(negated, "Neg"), let g = chains.producer(gain, "Mul", readBy: 2),
                      let (reciprocalName, gamma) = sides(g.node, { chains.producers[$0].map { graph.nodes[$0].op == "Reciprocal" } ?? false }),
                      graph.constants[gamma]?.floatTensor != nil, let reciprocal = chains.producer(reciprocalName, "Reciprocal"),
                      let sqrt = chains.producer(reciprocal.node.inputs[0], "Sqrt"), let add = chains.producer(sqrt.node.inputs[0], "Add"),
                      let (varianceName, epsilonName) = sides(add.node, { chains.producers[$0] != nil }),
                      let epsilon = chains.scalar(epsilonName),
                      let variance = chains.producer(varianceName, "GlobalAveragePool"), variance.node.attributes[IRAttribute.quantizeDequantize] == nil,
                      let square = chains.producer(variance.node.inputs[0], "Mul"),
                      square.node.inputs.count == 2, square.node.inputs[0] == square.node.inputs[1],
                      let difference = chains.producer(square.node.inputs[0], "Sub", readBy: 2), difference.node.inputs.count == 2,
                      difference.node.inputs[0] == x, let mean = chains.producer(difference.node.inputs[1], "GlobalAveragePool", readBy: 2),
                      mean.node.attributes[IRAttribute.quantizeDequantize] == nil,
                      mean.node.inputs[0] == x, neg.node.inputs[0] == difference.node.inputs[1] else { continue }
                let normalized = "\(sum.name)#normalized", ones = "\(sum.name)#scale"
                graph.constants[ones] = .float(Tensor(shape: [1], data: [1]))
                graph.nodes[mean.index] = Node(name: "\(sum.name)#layernorm", op: "LayerNormalization", inputs: [x, ones], outputs: [normalized],
                                               attributes: ["axis": .int(2), "epsilon": .float(epsilon)])
                graph.nodes[index] = Node(name: sum.name, op: "Mul", inputs: [normalized, gamma], outputs: sum.outputs, attributes: [:])
                let removed: Set = [a.index, b.index, neg.index, g.index, reciprocal.index, sqrt.index, add.index, variance.index,
                                    square.index, difference.index]
                graph.nodes = graph.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
                changed = true
                break
            }
        }
    }

    /// What the chain recognisers ask of a graph: which node computes a value, and how often the
    /// value is read.
    private struct ChainLookup {
        let graph: Graph
        let readers: [String: Int]
        let producers: [String: Int]

        init(_ graph: Graph) {
            self.graph = graph
            readers = graph.readerCounts
            producers = graph.producerIndices
        }

        /// The node that computes `name`, when it is an `op` with inputs and the value is read `count` times.
        func producer(_ name: String, _ op: String, readBy count: Int = 1) -> (index: Int, node: Node)? {
            guard let index = producers[name], graph.nodes[index].op == op, !graph.nodes[index].inputs.isEmpty,
                  readers[name] == count else { return nil }
            return (index, graph.nodes[index])
        }

        /// A constant of one float value and rank 0 or 1 (a higher rank would raise the result's rank).
        func scalar(_ name: String) -> Float? {
            guard let tensor = graph.constants[name]?.floatTensor, tensor.count == 1, tensor.shape.count <= 1 else { return nil }
            return tensor.data[0]
        }

        /// Whether `value` is `target` up to float rounding.
        static func near(_ value: Float?, _ target: Float) -> Bool { value.map { abs($0 - target) <= 1e-6 * max(1, abs(target)) } ?? false }
    }
}
