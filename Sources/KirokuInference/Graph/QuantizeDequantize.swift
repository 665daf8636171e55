/// Quantized models in QDQ form (ONNX Runtime's `quantize_static`): 8-bit weights behind
/// DequantizeLinear, and activations rounded to 8 bits by QuantizeLinear → DequantizeLinear pairs.
/// Dequantized weights become float constants at load; each pair becomes one elementwise step
/// (QuantizationStep) that rounds and saturates as the pair would, fused into the convolution
/// before it where it can be. The arithmetic between the pairs runs on the float kernels.
extension GraphPasses {
    /// DequantizeLinear of constants (int8, uint8 or int32 values; a scale and zero point per
    /// tensor or per channel along `axis`) becomes a float constant.
    static func foldConstantDequantize(_ graph: inout Graph) {
        var folded = Set<Int>()
        for (index, node) in graph.nodes.enumerated() where node.op == "DequantizeLinear" {
            guard let value = dequantized(node, graph.constants) else { continue }
            graph.constants[node.outputs[0]] = .float(value)
            folded.insert(index)
        }
        graph.nodes = graph.nodes.enumerated().filter { !folded.contains($0.offset) }.map(\.element)
    }

    /// A DequantizeLinear node's output when its inputs are constants of a form it can read.
    static func dequantized(_ node: Node, _ constants: [String: Constant]) -> Tensor? {
        guard node.int("block_size", default: 0) == 0, let values = node.input(0).flatMap({ constants[$0] }),
              case .int64(let shape, let integers) = values,
              let scale = node.input(1).flatMap({ constants[$0]?.floatTensor }), scale.count > 0 else { return nil }
        guard let zeros = node.input(2).map({ constants[$0]?.integers }) ?? Array(repeating: 0, count: scale.count),
              zeros.count == scale.count else { return nil }
        var channel: (Int) -> Int = { _ in 0 }
        if scale.count > 1 || scale.shape.count > 1 {
            let rank = shape.count, given = node.int("axis", default: 1), axis = given < 0 ? given + rank : given
            guard scale.shape.count == 1, axis >= 0, axis < rank, shape[axis] == scale.count else { return nil }
            let inner = shape[(axis + 1)...].reduce(1, *)
            channel = { ($0 / inner) % scale.count }
        }
        return Tensor(shape: shape, data: integers.indices.map { i in
            Float(integers[i] - Int64(zeros[channel(i)])) * scale.data[channel(i)]
        })
    }

    /// QuantizeLinear (scalar scale and zero point) read only by DequantizeLinear nodes (scalar
    /// too): each DequantizeLinear becomes one QuantizeDequantize of the QuantizeLinear's input,
    /// or, with `rounding` false (layers the host runs on float kernels), the input itself: the
    /// float layers then compute as the float model's do, on its dequantized weights, and chain as
    /// its layers do (a rounding step between two convolutions would break their channel blocks).
    /// A GlobalAveragePool that alone reads a step's output takes the step on (its
    /// `quantizeDequantize` attribute): it rounds each value as it reads it, in one pass.
    static func fuseQuantizeDequantize(_ graph: inout Graph, rounding: Bool = true) {
        let readers = graph.readerCounts, producers = graph.producerIndices
        let readingOps = Dictionary(grouping: graph.nodes.flatMap { node in Set(node.inputs).map { ($0, node.op) } }, by: \.0)
        let pools = Dictionary(graph.nodes.indices.filter { graph.nodes[$0].op == "GlobalAveragePool" }.compactMap { index in
            graph.nodes[index].input(0).map { ($0, index) }
        }, uniquingKeysWith: { first, _ in first })
        var pooled = Set<Int>()
        for (index, node) in graph.nodes.enumerated() where node.op == "DequantizeLinear" {
            guard let quantized = node.input(0), let quantizer = producers[quantized].map({ graph.nodes[$0] }),
                  quantizer.op == "QuantizeLinear", let x = quantizer.input(0),
                  let reading = readingOps[quantized], readers[quantized] == reading.count,
                  reading.allSatisfy({ $0.1 == "DequantizeLinear" }),
                  case .ints(let range)? = quantizer.attributes[IRAttribute.quantizedRange], range.count == 2,
                  let quantize = scalarQuantization(quantizer, graph), let dequantize = scalarQuantization(node, graph)
            else { continue }
            let step = QuantizationStep(scaleIn: quantize.scale, zeroIn: quantize.zero, scaleOut: dequantize.scale,
                                        zeroOut: dequantize.zero, low: Float(range[0]), high: Float(range[1]))
            let output = node.outputs[0]
            if rounding, readers[output] == 1, let pool = pools[output],
               graph.nodes[pool].attributes[IRAttribute.quantizeDequantize] == nil {
                graph.nodes[pool].inputs[0] = x
                graph.nodes[pool].attributes[IRAttribute.quantizeDequantize] = .floats(step.parameters)
                pooled.insert(index)
                continue
            }
            // The QuantizeLinear, read by nothing once its readers are replaced, goes with the dead nodes.
            graph.nodes[index] = rounding
                ? Node(name: node.name, op: IROperator.quantizeDequantize, inputs: [x], outputs: [node.outputs[0]],
                       attributes: [IRAttribute.quantizeDequantize: .floats(step.parameters)])
                : Node(name: node.name, op: "Identity", inputs: [x], outputs: [node.outputs[0]], attributes: [:])
        }
        graph.nodes = graph.nodes.indices.filter { !pooled.contains($0) }.map { graph.nodes[$0] }
        if !rounding { forwardIdentities(&graph) }
    }

    /// Readers of an Identity's output read its input instead; the Identity stays only where its
    /// output is a graph output.
    static func forwardIdentities(_ graph: inout Graph) {
        let outputs = Set(graph.outputs)
        var source: [String: String] = [:]
        for node in graph.nodes where node.op == "Identity" && !outputs.contains(node.outputs[0]) {
            if let input = node.input(0) { source[node.outputs[0]] = source[input] ?? input }
        }
        guard !source.isEmpty else { return }
        graph.nodes = graph.nodes.compactMap { node in
            if node.op == "Identity" && source[node.outputs[0]] != nil { return nil }
            var node = node
            node.inputs = node.inputs.map { source[$0] ?? $0 }
            return node
        }
    }

    /// A Quantize- or DequantizeLinear node's scale and zero point when both are scalar constants.
    static func scalarQuantization(_ node: Node, _ graph: Graph) -> (scale: Float, zero: Float)? {
        guard let scale = node.input(1).flatMap({ graph.constants[$0]?.floatTensor }), scale.count == 1,
              scale.data[0].isFinite, scale.data[0] > 0 else { return nil }
        guard let zeroName = node.input(2) else { return (scale.data[0], 0) }
        guard let zero = graph.constants[zeroName]?.integers, zero.count == 1 else { return nil }
        return (scale.data[0], Float(zero[0]))
    }
}

/// What QuantizeLinear (scale and zero point in, integer range) then DequantizeLinear (scale and
/// zero point out) compute on a float: (saturate(round(x / scaleIn) + zeroIn) − zeroOut) · scaleOut,
/// rounding halves to even as ONNX specifies.
struct QuantizationStep: Equatable {
    var scaleIn: Float, zeroIn: Float, scaleOut: Float, zeroOut: Float, low: Float, high: Float

    /// The six values in the order the fused node's attribute holds them.
    var parameters: [Float] { [scaleIn, zeroIn, scaleOut, zeroOut, low, high] }

    /// The step as the kernel loops take it.
    var loopsForm: KernelLoops.Rounding { (scaleIn, zeroIn, scaleOut, zeroOut, low, high) }

    /// Applies the step to every value in place (one loop the compiler vectorises).
    func apply(_ values: UnsafeMutableBufferPointer<Float>) {
        for i in values.indices { values[i] = self(values[i]) }
    }

    @inline(__always)
    func callAsFunction(_ x: Float) -> Float {
        // Values beyond the range saturate anyway; within it, adding and taking away 1.5 · 2^23
        // rounds to the nearest integer, halves to even (the default rounding), in a vector lane.
        let scaled = min(max(x / scaleIn, low - zeroIn - 1), high - zeroIn + 1)
        let level = min(max((scaled + 0x1.8p23) - 0x1.8p23 + zeroIn, low), high)
        return (level - zeroOut) * scaleOut
    }
}

extension QuantizationStep {
    /// The step from a fused node's attribute, if it holds six values.
    init?(parameters: [Float]) {
        guard parameters.count == 6 else { return nil }
        self.init(scaleIn: parameters[0], zeroIn: parameters[1], scaleOut: parameters[2], zeroOut: parameters[3],
                  low: parameters[4], high: parameters[5])
    }
}
