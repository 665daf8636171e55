/// QDQ models on integer kernels. Where a Conv, Gemm or MatMul reads a quantized activation
/// (QuantizeLinear → DequantizeLinear) with 8-bit constant weights behind DequantizeLinear, it
/// becomes one IntegerConvolution on the activation's levels: int16 products summed in int32, a
/// SiLU or HardSwish after it computed before its store, its Relu or Clip and the QuantizeLinear
/// after it folded into the requantization of its output. An Add
/// of two quantized activations followed by a QuantizeLinear becomes an IntegerAdd. The levels
/// between them are stored as int16 centred on their zero point (level − zero point, so zero
/// padding is the zero point), positions by channels (NHWC). A QuantizeLinear of a float value
/// that an integer operator reads becomes a Quantize step, and a DequantizeLinear of levels that
/// a float operator reads a Dequantize step; a MaxPool from levels to levels (DequantizeLinear →
/// MaxPool → QuantizeLinear, requantized where their scales or zero points differ) becomes an
/// IntegerMaxPool; a GlobalAveragePool of levels an IntegerMean (each channel's mean, as floats)
/// and a Mul of levels by float factors before a QuantizeLinear an IntegerScale (a squeeze-
/// excitation's scale, levels to levels); every other QuantizeLinear → DequantizeLinear pair
/// stays for `fuseQuantizeDequantize`.
extension GraphPasses {
    static func lowerToIntegerOperators(_ graph: inout Graph, floatLayers: Set<String> = []) {
        let producers = graph.producerIndices, readerCounts = graph.readerCounts
        var readerIndices: [String: [Int]] = [:]
        for (index, node) in graph.nodes.enumerated() { for input in Set(node.inputs) where !input.isEmpty { readerIndices[input, default: []].append(index) } }
        let outputs = Set(graph.outputs)
        let lowering = IntegerLowering(graph: graph, producers: producers, readerCounts: readerCounts, readerIndices: readerIndices, outputs: outputs)
        var replaced: [Int: Node] = [:], removed = Set<Int>(), levels = Set<String>()
        for (index, node) in graph.nodes.enumerated() where !removed.contains(index) {
            guard let match = lowering.match(node), !floatLayers.contains(match.node.name),
                  match.removed.allSatisfy({ !removed.contains($0) && replaced[$0] == nil }) else { continue }
            removed.formUnion(match.removed)
            replaced[match.at] = match.node
            levels.formUnion(match.inputs)
            if match.node.attributes[IRAttribute.integerLevels] != nil { levels.insert(match.node.outputs[0]) }
        }
        guard !replaced.isEmpty else { return }
        // Max pooling between integer operators' levels takes the max of the levels themselves.
        // So does a pooling of levels to floats, and a squeeze-excitation's scale of levels to levels.
        for (index, node) in graph.nodes.enumerated() where !removed.contains(index) && replaced[index] == nil {
            guard let match = lowering.maxPool(node, levels: levels) ?? lowering.channelMean(node, levels: levels)
                    ?? lowering.channelScale(node, levels: levels),
                  match.removed.allSatisfy({ !removed.contains($0) && replaced[$0] == nil }) else { continue }
            removed.formUnion(match.removed)
            replaced[match.at] = match.node
        }
        for (index, node) in graph.nodes.enumerated() where !removed.contains(index) && replaced[index] == nil {
            // A float value quantized for an integer operator: a Quantize step writes its levels.
            if node.op == "QuantizeLinear", levels.contains(node.outputs[0]), let q = lowering.quantization(node) {
                replaced[index] = Node(name: node.name, op: IROperator.quantize, inputs: [node.inputs[0]], outputs: [node.outputs[0]],
                                       attributes: [IRAttribute.integerScale: .floats([q.scale]), IRAttribute.integerLevels: .ints([q.low - q.zero, q.high - q.zero])])
            }
            // Levels a float operator reads: a Dequantize step makes floats of them.
            if node.op == "DequantizeLinear", let x = lowering.dequantized(node.outputs[0], levels: levels) {
                replaced[index] = Node(name: node.name, op: IROperator.dequantize, inputs: [x.levels], outputs: [node.outputs[0]],
                                       attributes: [IRAttribute.integerScale: .floats([x.scale, x.shift])])
            }
        }
        graph.nodes = graph.nodes.indices.compactMap { index in replaced[index] ?? (removed.contains(index) ? nil : graph.nodes[index]) }
        // Each integer convolution learns the levels its input may take (byte products shift them to 0...255).
        let outputLevels = Dictionary(graph.nodes.compactMap { node in node.attributes[IRAttribute.integerLevels].map { (node.outputs[0], $0) } },
                                      uniquingKeysWith: { first, _ in first })
        for index in graph.nodes.indices where graph.nodes[index].op == IROperator.integerConvolution {
            graph.nodes[index].attributes[IRAttribute.integerInputLevels] = graph.nodes[index].inputs.first.flatMap { outputLevels[$0] }
        }
        // The weights' DequantizeLinear nodes are read by nothing now: gone before anything folds them.
        removeDeadNodes(&graph)
    }
}

/// The pattern matching of `lowerToIntegerOperators` over one graph.
private struct IntegerLowering {
    let graph: Graph
    let producers: [String: Int]
    let readerCounts: [String: Int]
    let readerIndices: [String: [Int]]
    let outputs: Set<String>

    /// An integer operator replacing nodes `removed`, placed at `at` (the last of them), reading levels `inputs`.
    struct Match {
        let node: Node
        let removed: Set<Int>
        let at: Int
        let inputs: [String]
    }

    /// A QuantizeLinear's scalar scale and zero point and the range of its levels.
    func quantization(_ node: Node) -> (scale: Float, zero: Int, low: Int, high: Int)? {
        guard node.op == "QuantizeLinear", let q = scalar(node), case .ints(let range)? = node.attributes[IRAttribute.quantizedRange],
              range.count == 2 else { return nil }
        return (q.scale, Int(q.zero), range[0], range[1])
    }

    /// The zero point of levels: their QuantizeLinear's, or their QLinear operator's output's.
    func zeroPoint(of name: String) -> Int? {
        guard let producer = producers[name].map({ graph.nodes[$0] }) else { return nil }
        if let q = quantization(producer) { return q.zero }
        guard ["QLinearConv", "QLinearMatMul"].contains(producer.op) else { return nil }
        return producer.input(7).map { graph.constants[$0]?.integers?.first } ?? 0
    }

    /// A Quantize- or DequantizeLinear's scale and zero point when both are scalar constants.
    func scalar(_ node: Node) -> (scale: Float, zero: Float)? {
        GraphPasses.scalarQuantization(node, graph)
    }

    /// The levels a float input reads when it is DequantizeLinear(QuantizeLinear(...)) with the same
    /// scale and zero point, the levels read by nothing but DequantizeLinear nodes: their name and scale.
    func levels(of name: String) -> (name: String, scale: Float)? {
        guard let reader = producers[name].map({ graph.nodes[$0] }), reader.op == "DequantizeLinear", let source = reader.input(0),
              !outputs.contains(source), let producer = producers[source].map({ graph.nodes[$0] }),
              let q = quantization(producer), let d = scalar(reader), d.scale == q.scale, Int(d.zero) == q.zero,
              readerIndices[source]?.allSatisfy({ graph.nodes[$0].op == "DequantizeLinear" }) == true else { return nil }
        return (source, q.scale)
    }

    /// The single reader of `name` (not a graph output), if it has exactly one.
    func onlyReader(of name: String) -> Int? {
        guard readerCounts[name] == 1, !outputs.contains(name), let readers = readerIndices[name], readers.count == 1 else { return nil }
        return readers[0]
    }

    /// The quantization an integer operator's output takes: the nodes folded into it (Relu or
    /// Clip, QuantizeLinear), the levels' name, their scale and the centred levels they may take.
    typealias QuantizedOutput = (nodes: [Int], output: String, scale: Float, levels: ClosedRange<Int>)

    /// What follows an operator's output `name`: an optional Relu or Clip (constant bounds), then
    /// a QuantizeLinear whose levels only DequantizeLinear nodes read. Nil when no QuantizeLinear
    /// follows (the operator's output stays float).
    func quantizedOutput(after name: String) -> QuantizedOutput? {
        var nodes: [Int] = [], value = name, bounds: ClosedRange<Float>? = nil
        guard var next = onlyReader(of: value) else { return nil }
        if let activation = Activation.of(graph.nodes[next], constants: graph.constants)?.bounds,
           ["Relu", "Clip"].contains(graph.nodes[next].op) {
            bounds = activation
            nodes.append(next)
            value = graph.nodes[next].outputs[0]
            guard let after = onlyReader(of: value) else { return nil }
            next = after
        }
        let node = graph.nodes[next]
        guard node.inputs.first == value, let q = quantization(node), !outputs.contains(node.outputs[0]),
              readerIndices[node.outputs[0]]?.allSatisfy({ graph.nodes[$0].op == "DequantizeLinear" }) ?? true else { return nil }
        nodes.append(next)
        var low = q.low - q.zero, high = q.high - q.zero
        if let bounds {
            // Rounding keeps order: the level of a clamped value is the clamped level.
            // Compared as floats first: a Clip with one bound omitted has ±greatestFiniteMagnitude for the other.
            let (lower, upper) = ((bounds.lowerBound / q.scale).rounded(.toNearestOrEven), (bounds.upperBound / q.scale).rounded(.toNearestOrEven))
            if lower > Float(low) { low = lower > Float(high) ? high + 1 : Int(lower) }
            if upper < Float(high) { high = upper < Float(low) ? low - 1 : Int(upper) }
        }
        guard low <= high else { return nil }
        return (nodes, node.outputs[0], q.scale, low...high)
    }

    /// A SiLU (Sigmoid(x) and Mul(x, Sigmoid(x)), as exporters write it) or a HardSwish that alone
    /// reads `name`: its nodes, its output and the activation, which an integer operator computes
    /// before storing its output.
    typealias Gate = (nodes: [Int], output: String, activation: Activation)

    func gate(after name: String) -> Gate? {
        // (A graph output counts among readerCounts' readers: it is never gated.)
        guard let readers = readerIndices[name], readerCounts[name] == readers.count else { return nil }
        if readers.count == 1, graph.nodes[readers[0]].op == "HardSwish" { return (readers, graph.nodes[readers[0]].outputs[0], .hardSwish) }
        // Nodes in topological order: the Sigmoid before the Mul that reads it.
        guard readers.count == 2 else { return nil }
        let (sigmoid, product) = (readers[0], readers[1])
        let gateValue = graph.nodes[sigmoid].outputs[0], node = graph.nodes[product]
        guard graph.nodes[sigmoid].op == "Sigmoid", node.op == "Mul", onlyReader(of: gateValue) == product,
              node.inputs.count == 2, Set(node.inputs) == [name, gateValue] else { return nil }
        return ([sigmoid, product], node.outputs[0], .function(.swish(alpha: 1)))
    }

    /// Integer weights behind a DequantizeLinear: centred on their zero point (within ±255), with
    /// one scale per output channel (axis `channelAxis`) or one for all.
    func weights(_ name: String, channelAxis: Int) -> (shape: [Int], values: [Int64], scales: [Float])? {
        guard let node = producers[name].map({ graph.nodes[$0] }), node.op == "DequantizeLinear", node.int("block_size", default: 0) == 0,
              let valuesName = node.input(0), case .int64(let shape, let values)? = graph.constants[valuesName],
              let scale = node.input(1).flatMap({ graph.constants[$0]?.floatTensor }), scale.count > 0 else { return nil }
        let zeros = node.input(2).map { graph.constants[$0]?.integers } ?? Array(repeating: 0, count: scale.count)
        guard let zeros, zeros.count == scale.count, channelAxis < shape.count else { return nil }
        let rank = shape.count, given = node.int("axis", default: 1), axis = given < 0 ? given + rank : given
        guard scale.count == 1 || axis == channelAxis else { return nil }
        return Self.centred(shape: shape, values: values, scales: scale.data, zeros: zeros, channelAxis: channelAxis)
    }

    /// Integer weights less their zero points (one for all, or one per channel along
    /// `channelAxis`), each within ±255, and a scale per channel; nil when they do not fit.
    static func centred(shape: [Int], values: [Int64], scales: [Float], zeros: [Int], channelAxis: Int)
        -> (shape: [Int], values: [Int64], scales: [Float])? {
        let channels = shape[channelAxis], inner = shape[(channelAxis + 1)...].reduce(1, *)
        guard [1, channels].contains(scales.count), [1, channels].contains(zeros.count) else { return nil }
        var centred = values
        // Runs of `inner` values share a channel, channels repeating in order.
        var i = 0
        while i < centred.count {
            let zero = Int64(zeros[zeros.count == 1 ? 0 : (i / inner) % channels])
            for j in i..<min(i + inner, centred.count) {
                centred[j] &-= zero
                guard centred[j] >= -255, centred[j] <= 255 else { return nil }
            }
            i += inner
        }
        return (shape, centred, scales.count == 1 ? [Float](repeating: scales[0], count: channels) : scales)
    }

    /// A bias: a float constant, or integers behind a DequantizeLinear; zeros when absent.
    func bias(_ name: String?, channels: Int) -> [Float]? {
        guard let name else { return [Float](repeating: 0, count: channels) }
        let value = graph.constants[name]?.floatTensor
            ?? producers[name].flatMap { GraphPasses.dequantized(graph.nodes[$0], graph.constants) }
        guard let value, value.count == channels else { return nil }
        return value.data
    }

    /// Whether a value is known to be 2-D from what computes it: Flatten, Gemm, a Reshape to a
    /// constant 2-element shape, or a MatMul of such a value, through QuantizeLinear,
    /// DequantizeLinear and activations.
    func isMatrix(_ name: String, depth: Int = 0) -> Bool {
        if let input = graph.inputs.first(where: { $0.name == name }) { return input.dimensions.count == 2 }
        guard depth < 16, let node = producers[name].map({ graph.nodes[$0] }) else { return false }
        switch node.op {
        case "Flatten", "Gemm": return true
        case "Reshape": return node.input(1).flatMap { graph.constants[$0]?.integers?.count } == 2
        case "MatMul", "QLinearMatMul", "QuantizeLinear", "DequantizeLinear", "Relu", "Clip":
            return node.input(0).map { isMatrix($0, depth: depth + 1) } ?? false
        default: return false
        }
    }

    func match(_ node: Node) -> Match? {
        switch node.op {
        case "Conv": convolution(node)
        case "Gemm", "MatMul": matrixProduct(node)
        case "Add": addition(node)
        case "QLinearConv", "QLinearMatMul": qlinear(node)
        default: nil
        }
    }

    private func convolution(_ node: Node) -> Match? {
        // Any grouping: ungrouped, depthwise, or groups of several channels.
        let groups = node.int("group", default: 1)
        guard let x = node.input(0).flatMap(levels(of:)), let w = node.input(1).flatMap({ weights($0, channelAxis: 0) }),
              w.shape.count == 4, groups >= 1, w.shape[0] % groups == 0, let bias = bias(node.input(2), channels: w.shape[0]) else { return nil }
        let gate = gate(after: node.outputs[0])
        return integer(node, input: x, weights: w, matrix: nil, bias: bias, gate: gate, output: quantizedOutput(after: gate?.output ?? node.outputs[0]))
    }

    private func matrixProduct(_ node: Node) -> Match? {
        // A MatMul's input may have any rank; only a 2-D one is a matrix product of rows.
        guard let x = node.input(0).flatMap(levels(of:)), node.op == "Gemm" || isMatrix(x.name) else { return nil }
        let transposed = node.op == "Gemm" && node.int("transB", default: 0) == 1
        if node.op == "Gemm" {
            guard node.int("transA", default: 0) == 0, node.float("alpha", default: 1) == 1, node.float("beta", default: 1) == 1 else { return nil }
        }
        guard let w = node.input(1).flatMap({ weights($0, channelAxis: transposed ? 0 : 1) }), w.shape.count == 2,
              let bias = bias(node.op == "MatMul" ? nil : node.input(2), channels: w.scales.count) else { return nil }
        let gate = gate(after: node.outputs[0])
        return integer(node, input: x, weights: w, matrix: transposed ? .outputsFirst : .inputsFirst, bias: bias, gate: gate,
                       output: quantizedOutput(after: gate?.output ?? node.outputs[0]))
    }

    /// How a matrix product's 2-D weights lie: [output channel][input] (Gemm with transB = 1) or
    /// [input][output channel] (MatMul, Gemm, QLinearMatMul).
    enum MatrixLayout { case outputsFirst, inputsFirst }

    /// The integer operator for a convolution or matrix product `node` reading levels `x`, with
    /// centred weights `w` (a matrix product's in `matrix` layout), a real bias per channel, the
    /// activation it computes before its store, and the quantized output that follows (nil: a float output).
    private func integer(_ node: Node, input x: (name: String, scale: Float), weights w: (shape: [Int], values: [Int64], scales: [Float]),
                         matrix: MatrixLayout?, bias: [Float], gate: Gate? = nil, output quantized: QuantizedOutput?) -> Match {
        var attributes = node.attributes.filter { ["pads", "strides", "dilations", "group", "kernel_shape", "auto_pad"].contains($0.key) }
        switch matrix {
        case nil:
            attributes[IRAttribute.integerWeights] = .tensor(.int64(shape: w.shape, values: w.values))
        case .some(let layout):
            // As [output channel][input], 1x1: a pointwise convolution's weights.
            let (inputs, channels) = layout == .outputsFirst ? (w.shape[1], w.shape[0]) : (w.shape[0], w.shape[1])
            let values = layout == .outputsFirst ? w.values : (0..<channels * inputs).map { w.values[($0 % inputs) * channels + $0 / inputs] }
            attributes[IRAttribute.integerWeights] = .tensor(.int64(shape: [channels, inputs, 1, 1], values: values))
            attributes[IRAttribute.integerMatrix] = .int(1)
        }
        let index = producers[node.outputs[0]]!
        var removed: Set<Int> = [index], output = node.outputs[0], at = index, outputScale: Float = 1
        if let gate {
            removed.formUnion(gate.nodes)
            (output, at) = (gate.output, gate.nodes.max()!)
            attributes[IRAttribute.integerGate] = .activation(gate.activation)
        }
        if let quantized {
            removed.formUnion(quantized.nodes)
            (output, at, outputScale) = (quantized.output, quantized.nodes.last ?? at, quantized.scale)
            attributes[IRAttribute.integerLevels] = .ints([quantized.levels.lowerBound, quantized.levels.upperBound])
        }
        // The gate computes on real values: the output's units times its scale.
        if gate != nil { attributes[IRAttribute.integerGateScale] = .float(outputScale) }
        attributes[IRAttribute.integerScale] = .floats(w.scales.map { x.scale * $0 / outputScale })
        attributes[IRAttribute.integerOffset] = .floats(bias.map { $0 / outputScale })
        return Match(node: Node(name: node.name, op: IROperator.integerConvolution, inputs: [x.name], outputs: [output], attributes: attributes),
                     removed: removed, at: at, inputs: [x.name])
    }

    /// A MaxPool `node` that reads DequantizeLinear(`levels` an integer operator writes) and is
    /// read only by a QuantizeLinear whose levels integer operators read: dequantizing and
    /// rounding keep order, so it is the max of the levels, requantized where the scales differ.
    func maxPool(_ node: Node, levels: Set<String>) -> Match? {
        guard node.op == "MaxPool", node.outputs.count == 1, let index = producers[node.outputs[0]], let input = node.input(0),
              let x = dequantized(input, levels: levels), let dequantize = producers[input], onlyReader(of: input) == index,
              let quantize = onlyReader(of: node.outputs[0]), let q = quantization(graph.nodes[quantize]),
              levels.contains(graph.nodes[quantize].outputs[0])
        else { return nil }
        var attributes = node.attributes.filter { ["pads", "strides", "dilations", "kernel_shape", "auto_pad", "ceil_mode"].contains($0.key) }
        attributes[IRAttribute.integerLevels] = .ints([q.low - q.zero, q.high - q.zero])
        // The input's scale and shift (DequantizeLinear's: (level + shift) · scale) and the output's scale.
        attributes[IRAttribute.integerScale] = .floats([x.scale, x.shift, q.scale])
        return Match(node: Node(name: node.name, op: IROperator.integerMaxPool, inputs: [x.levels], outputs: [graph.nodes[quantize].outputs[0]],
                                attributes: attributes),
                     removed: [dequantize, index, quantize], at: quantize, inputs: [x.levels])
    }

    /// The levels a DequantizeLinear `name` reads when they are among `levels` (an integer
    /// operator's output or input): their name, the DequantizeLinear's scale and the shift
    /// between the zero points ((level + shift) · scale, as `dequantize` steps compute).
    func dequantized(_ name: String, levels: Set<String>) -> (levels: String, scale: Float, shift: Float)? {
        guard let dequantize = producers[name].map({ graph.nodes[$0] }), dequantize.op == "DequantizeLinear", let source = dequantize.input(0),
              levels.contains(source), let d = scalar(dequantize), let zero = zeroPoint(of: source) else { return nil }
        return (source, d.scale, Float(zero) - d.zero)
    }

    /// A GlobalAveragePool of DequantizeLinear(`levels`): each channel's mean of the levels, as floats.
    func channelMean(_ node: Node, levels: Set<String>) -> Match? {
        guard node.op == "GlobalAveragePool", node.outputs.count == 1, let index = producers[node.outputs[0]],
              let x = node.input(0).flatMap({ dequantized($0, levels: levels) }) else { return nil }
        return Match(node: Node(name: node.name, op: IROperator.integerMean, inputs: [x.levels], outputs: node.outputs,
                                attributes: [IRAttribute.integerScale: .floats([x.scale, x.shift])]),
                     removed: [index], at: index, inputs: [x.levels])
    }

    /// A Mul of DequantizeLinear(`levels`) by a float value (a squeeze-excitation's factors), read
    /// by a QuantizeLinear whose levels integer operators read: the levels scaled, requantized.
    func channelScale(_ node: Node, levels: Set<String>) -> Match? {
        guard node.op == "Mul", node.inputs.count == 2, node.inputs[0] != node.inputs[1] else { return nil }
        let inputs = node.inputs.map { dequantized($0, levels: levels) }
        guard let index = producers[node.outputs[0]], let side = inputs.firstIndex(where: { $0 != nil }), let x = inputs[side], inputs[1 - side] == nil,
              graph.constants[node.inputs[1 - side]] == nil,
              let quantized = quantizedOutput(after: node.outputs[0]), levels.contains(quantized.output) else { return nil }
        let attributes: [String: Attribute] = [
            IRAttribute.integerScale: .floats([x.scale, x.shift, quantized.scale]),
            IRAttribute.integerLevels: .ints([quantized.levels.lowerBound, quantized.levels.upperBound]),
        ]
        return Match(node: Node(name: node.name, op: IROperator.integerScale, inputs: [x.levels, node.inputs[1 - side]], outputs: [quantized.output],
                                attributes: attributes),
                     removed: Set(quantized.nodes + [index]), at: quantized.nodes.last!, inputs: [x.levels])
    }

    /// ONNX's operator form (ONNX Runtime's QOperator format): QLinearConv(x, x_scale, x_zero,
    /// w, w_scale, w_zero, y_scale, y_zero, bias) and QLinearMatMul(a, ..., b, ..., y, ...) on
    /// levels from a QuantizeLinear or another of them, read by nothing but these and DequantizeLinear.
    private func qlinear(_ node: Node) -> Match? {
        let scalar = { (index: Int) -> Float? in
            node.input(index).flatMap { self.graph.constants[$0]?.floatTensor }.flatMap { $0.count == 1 ? $0.data[0] : nil }
        }
        let zero = { (index: Int) -> Int? in node.input(index).flatMap { self.graph.constants[$0]?.integers }.flatMap { $0.count == 1 ? $0[0] : nil } }
        guard let x = node.input(0), let xScale = scalar(1), let xZero = zero(2), let yScale = scalar(6), let yZero = zero(7),
              case .ints(let range)? = node.attributes[IRAttribute.quantizedRange], range.count == 2,
              levelsOf(x, scale: xScale, zero: xZero), readable(node.outputs[0]), !outputs.contains(node.outputs[0]),
              let valuesName = node.input(3), case .int64(let shape, let values)? = graph.constants[valuesName],
              let weightScale = node.input(4).flatMap({ graph.constants[$0]?.floatTensor }),
              let weightZeros = node.input(5).map({ graph.constants[$0]?.integers }) ?? [0] else { return nil }
        let matrix = node.op == "QLinearMatMul", groups = node.int("group", default: 1)
        guard matrix ? shape.count == 2 && isMatrix(x) : shape.count == 4 && groups >= 1 && shape[0] % groups == 0,
              let w = Self.centred(shape: shape, values: values, scales: weightScale.data, zeros: weightZeros, channelAxis: matrix ? 1 : 0)
        else { return nil }
        // The bias: int32 at x_scale · w_scale, no zero point.
        var bias = [Float](repeating: 0, count: w.scales.count)
        if !matrix, let biasName = node.input(8) {
            guard let integers = graph.constants[biasName]?.integers, integers.count == bias.count else { return nil }
            bias = bias.indices.map { Float(integers[$0]) * xScale * w.scales[$0] }
        }
        return integer(node, input: (x, xScale), weights: w, matrix: matrix ? .inputsFirst : nil, bias: bias,
                       output: ([], node.outputs[0], yScale, (range[0] - yZero)...(range[1] - yZero)))
    }

    /// Whether `name` is levels at this scale and zero point: a QuantizeLinear's output or a QLinear
    /// operator's, which only these operators and DequantizeLinear read.
    private func levelsOf(_ name: String, scale: Float, zero: Int) -> Bool {
        guard let producer = producers[name].map({ graph.nodes[$0] }), readable(name), !outputs.contains(name) else { return false }
        switch producer.op {
        case "QuantizeLinear":
            guard let q = quantization(producer) else { return false }
            return q.scale == scale && q.zero == zero
        case "QLinearConv", "QLinearMatMul":
            return producer.input(6).flatMap { graph.constants[$0]?.floatTensor?.data.first } == scale && zeroPoint(of: name) == zero
        default: return false
        }
    }

    /// Whether every reader of levels `name` takes levels: DequantizeLinear, QLinearConv, QLinearMatMul.
    private func readable(_ name: String) -> Bool {
        readerIndices[name]?.allSatisfy { ["DequantizeLinear", "QLinearConv", "QLinearMatMul"].contains(graph.nodes[$0].op) } ?? true
    }

    private func addition(_ node: Node) -> Match? {
        guard node.inputs.count == 2, let a = levels(of: node.inputs[0]), let b = levels(of: node.inputs[1]),
              let quantized = quantizedOutput(after: node.outputs[0]) else { return nil }
        let attributes: [String: Attribute] = [
            IRAttribute.integerScale: .floats([a.scale / quantized.scale, b.scale / quantized.scale]),
            IRAttribute.integerLevels: .ints([quantized.levels.lowerBound, quantized.levels.upperBound]),
        ]
        let index = producers[node.outputs[0]]!
        return Match(node: Node(name: node.name, op: IROperator.integerAdd, inputs: [a.name, b.name], outputs: [quantized.output],
                                attributes: attributes),
                     removed: Set(quantized.nodes + [index]), at: quantized.nodes.last!, inputs: [a.name, b.name])
    }
}
