extension OperatorCompiler {
    /// LSTM (opsets 11 to 22, as the loader takes them) with W, R, B and P known at load: forward,
    /// reverse or bidirectional, peepholes, clip, input_forget, initial states known at load or at
    /// run time, and the activations ONNX lists that the engine has (Sigmoid, Tanh, Relu,
    /// LeakyRelu, HardSigmoid, Elu, Softplus), their alpha and beta read in order. Y, Y_h and Y_c
    /// are all written. A sequence_lens other than the sequence's length is refused.
    func lstm(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        let hidden = node.int("hidden_size", default: 0)
        guard hidden > 0, hidden <= ShapeMath.maximumElements else {
            throw compiler.fail(node, "needs a hidden_size from 1 to \(ShapeMath.maximumElements), has \(hidden)")
        }
        // As ONNX Runtime, which the engine is checked against, has only layout 0.
        guard node.int("layout", default: 0) == 0 else { throw compiler.fail(node, "layout 1 (batch first) is not supported (layout 0 is)") }
        let shape = x.shape
        guard shape.count == 3, shape.allSatisfy({ $0 > 0 }) else { throw compiler.shapeError(node, "X \(shape) is not a non-empty 3-D tensor") }
        let (steps, batch, inputSize) = (shape[0], shape[1], shape[2])
        let directionName = node.string("direction", default: "forward")
        guard let count = ["forward": 1, "reverse": 1, "bidirectional": 2][directionName] else {
            throw compiler.fail(node, "direction '\(directionName)' is not forward, reverse or bidirectional")
        }
        func weights(_ index: Int, _ what: String, _ expected: [Int], optional: Bool = false) throws(InferenceError) -> Tensor? {
            guard let tensor = try floatConstant(index) else {
                if optional { return nil }
                throw compiler.fail(node, "needs \(what) known at load")
            }
            guard tensor.shape == expected else { throw compiler.shapeError(node, "\(what) is \(tensor.shape), not \(expected)") }
            return tensor
        }
        let w = try weights(1, "W", [count, 4 * hidden, inputSize])!, r = try weights(2, "R", [count, 4 * hidden, hidden])!
        let b = try weights(3, "B", [count, 8 * hidden], optional: true), p = try weights(7, "P", [count, 3 * hidden], optional: true)
        if let lengths = try compiler.constantInput(node, 4) {
            guard let values = lengths.integers, values.count == batch, values.allSatisfy({ $0 == steps }) else {
                throw compiler.fail(node, "sequence_lens \(lengths.integers ?? []) other than the sequence's length (\(steps)) are not supported")
            }
        }
        let activations = try recurrentActivations(count: count)
        let gates = 4 * hidden, width = inputSize + hidden, multiply = compiler.kernels.loops.packedProduct
        let directions = (0..<count).map { d in
            // Row j of the joined weights: W's row j, then R's.
            func joined(_ j: Int, _ k: Int) -> Float {
                k < inputSize ? w.data[(d * gates + j) * inputSize + k] : r.data[(d * gates + j) * hidden + k - inputSize]
            }
            let weights: LSTMKernel.Weights
            if let multiply {
                let packed = MatMulKernel.panels(n: gates, k: width) { k, j in joined(j, k) }
                weights = .panels(compiler.store(Tensor(shape: [packed.count], data: packed)), multiply)
            } else {
                weights = .rows(compiler.store(Tensor(shape: [gates, width], data: (0..<gates * width).map { joined($0 / width, $0 % width) })))
            }
            let bias = (0..<gates).map { j in b.map { $0.data[d * 2 * gates + j] + $0.data[d * 2 * gates + gates + j] } ?? 0 }
            return LSTMKernel.Direction(
                reverse: directionName == "reverse" || d == 1, weights: weights, bias: compiler.store(Tensor(shape: [gates], data: bias)),
                peepholes: p.map { compiler.store(Tensor(shape: [3 * hidden], data: Array($0.data[(d * 3 * hidden)..<((d + 1) * 3 * hidden)]))) },
                gate: activations[3 * d], cell: activations[3 * d + 1], output: activations[3 * d + 2])
        }
        let stateShape = [count, batch, hidden]
        var operands = [x]
        func state(_ index: Int, _ what: String) throws(InferenceError) -> Int? {
            guard let name = node.input(index) else { return nil }
            let value = try compiler.value(name, of: node)
            guard value.shape == stateShape else { throw compiler.shapeError(node, "\(what) is \(value.shape), not \(stateShape)") }
            operands.append(value)
            return operands.count - 1
        }
        let initialHidden = try state(5, "initial_h"), initialCell = try state(6, "initial_c")
        let clip = node.attributes["clip"] == nil ? nil : node.float("clip", default: 0)
        if let clip, !(clip > 0) { throw compiler.fail(node, "clip \(clip) must be positive") }
        // Time, not images, is the first axis.
        compiler.mixesImages = true
        let kernel = LSTMKernel(steps: steps, batch: batch, inputSize: inputSize, hidden: hidden, directions: directions, clip: clip,
                                inputForget: node.int("input_forget", default: 0) == 1, initialHidden: initialHidden, initialCell: initialCell)
        return KernelPlan(kernel: kernel, operands: operands, outputShape: [steps, count, batch, hidden], otherOutputShapes: [stateShape, stateShape])
    }

    /// f, g and h of each direction (default Sigmoid, Tanh, Tanh), alpha and beta taken in order
    /// by the activations that have them.
    private func recurrentActivations(count: Int) throws(InferenceError) -> [Activation] {
        let names = node.strings("activations") ?? Array(repeating: ["Sigmoid", "Tanh", "Tanh"], count: count).flatMap { $0 }
        guard names.count == 3 * count else { throw compiler.fail(node, "needs \(3 * count) activations, has \(names.count)") }
        var alphas = (node.floats("activation_alpha") ?? [])[...], betas = (node.floats("activation_beta") ?? [])[...]
        return try names.map { name throws(InferenceError) -> Activation in
            switch name.lowercased() {
            case "sigmoid": return .sigmoid
            case "tanh": return .function(.tanh)
            case "relu": return .relu
            case "leakyrelu": return .leakyRelu(alpha: alphas.popFirst() ?? 0.01)
            case "hardsigmoid": return .hardSigmoid(alpha: alphas.popFirst() ?? 0.2, beta: betas.popFirst() ?? 0.5)
            case "elu": return .function(.elu(alpha: alphas.popFirst() ?? 1))
            case "softplus": return .function(.softplus)
            default:
                throw compiler.fail(node, "activation '\(name)' is not supported (Sigmoid, Tanh, Relu, LeakyRelu, HardSigmoid, Elu and Softplus are)")
            }
        }
    }
}
