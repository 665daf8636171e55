/// Builds the kernel for one run-time node from its input shapes and attributes.
struct OperatorCompiler {
    let compiler: Compiler
    let node: Node
    let inputs: [CompiledValue?]

    func input(_ index: Int) throws(InferenceError) -> CompiledValue {
        guard index < inputs.count, let value = inputs[index] else {
            throw compiler.shapeError(node, "input \(index) is missing")
        }
        return value
    }

    /// Input `index` known at load as floats (nil when absent), or an error when it is not float.
    func floatConstant(_ index: Int) throws(InferenceError) -> Tensor? {
        guard let constant = try compiler.constantInput(node, index) else { return nil }
        guard let tensor = constant.floatTensor else { throw compiler.fail(node, "input \(index) must be float") }
        return tensor
    }

    func kernel() throws(InferenceError) -> KernelPlan {
        if node.op != "LSTM", node.outputs.dropFirst().contains(where: { !$0.isEmpty }) {
            throw compiler.fail(node, "only the first output is supported (training-mode or index outputs are not)")
        }
        let x = try input(0)
        let shape = x.shape
        switch node.op {
        case "Conv": return try convolution(x)
        case IROperator.integerConvolution, IROperator.integerAdd, IROperator.integerMaxPool, IROperator.quantize, IROperator.dequantize,
             IROperator.integerMean, IROperator.integerScale:
            return try integerOperator(x, second: inputs.count > 1 ? try input(1) : nil)
        case "BatchNormalization": return try batchNorm(x)
        case _ where Activation.operators.contains(node.op) || node.op == IROperator.quantizeDequantize:
            guard let activation = Activation.of(node, constants: Self.constants(of: node, inputs)) else {
                throw compiler.fail(node, "Clip bounds must be scalar constants")
            }
            return KernelPlan(kernel: ActivationKernel(activation: activation, count: shape.reduce(1, *)), operands: [x], outputShape: shape)
        case _ where BinaryKernel.Operation.byOperator[node.op] != nil:
            guard inputs.count == 2 else { throw compiler.fail(node, "\(node.op) of \(inputs.count) run-time inputs is not supported (two are)") }
            let y = try input(1)
            guard let output = BinaryKernel.broadcast(shape, y.shape) else {
                throw compiler.shapeError(node, "shapes \(shape) and \(y.shape) do not broadcast")
            }
            let operation = BinaryKernel.Operation.byOperator[node.op]!
            return KernelPlan(kernel: BinaryKernel(operation: operation, shapes: [shape, y.shape], outputShape: output),
                              operands: [x, y], outputShape: output)
        case "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul":
            throw compiler.fail(node, "quantized values are supported in QDQ form (constant 8-bit weights behind DequantizeLinear, "
                + "QuantizeLinear read only by DequantizeLinear) or between QLinearConv and QLinearMatMul (constant 8-bit weights, "
                + "a 2-D input to QLinearMatMul, levels read by nothing else), each scale and zero point a scalar constant "
                + "but per-channel weight scales")
        case "MaxPool", "AveragePool": return try pooling(x)
        case "GlobalAveragePool", "GlobalMaxPool":
            guard shape.count >= 3 else { throw compiler.shapeError(node, "needs N, C and spatial axes, got \(shape)") }
            let output = Array(shape.prefix(2)) + [Int](repeating: 1, count: shape.count - 2)
            let rounding = node.floats(IRAttribute.quantizeDequantize).flatMap(QuantizationStep.init(parameters:))
            return KernelPlan(kernel: ReduceKernel(inputShape: shape, axes: Set(2..<shape.count), mode: node.op == "GlobalMaxPool" ? .max : .mean,
                                                   rounding: rounding),
                              operands: [x], outputShape: output)
        case "LayerNormalization": return try layerNorm(x)
        case "InstanceNormalization", "GroupNormalization": return try channelGroupNorm(x)
        case "Resize": return try resize(x)
        case "Einsum": return try einsum()
        case "GatherND", "ScatterND": return try indexedSlices(x)
        case "Col2Im": return try columnsToImage(x)
        case "LSTM": return try lstm(x)
        case "CumSum":
            guard let given = try compiler.constantInput(node, 1)?.integers, given.count == 1 else {
                throw compiler.fail(node, "needs its axis as a one-element constant")
            }
            let axis = try ShapeFolding.normalize(given, rank: shape.count, node: node, compiler: compiler)[0]
            if axis == 0 { compiler.mixesImages = true }
            let kernel = CumulativeSumKernel(outer: shape[..<axis].reduce(1, *), length: shape[axis], inner: shape[(axis + 1)...].reduce(1, *),
                                             exclusive: node.int("exclusive", default: 0) == 1, reverse: node.int("reverse", default: 0) == 1)
            return KernelPlan(kernel: kernel, operands: [x], outputShape: shape)
        case _ where ReduceKernel.Mode.byOperator[node.op] != nil:
            let axes = try ShapeFolding.axesOf(node, compiler: compiler, rank: shape.count)
            let reduced = Set((axes?.isEmpty ?? true) && node.int("noop_with_empty_axes", default: 0) == 0 ? Array(shape.indices) : axes ?? [])
            let keep = node.int("keepdims", default: 1) == 1
            let output = shape.enumerated().compactMap { reduced.contains($0.offset) ? (keep ? 1 : nil) : $0.element }
            return KernelPlan(kernel: ReduceKernel(inputShape: shape, axes: reduced, mode: ReduceKernel.Mode.byOperator[node.op]!),
                              operands: [x], outputShape: output)
        case _ where Compiler.reshapeOperators.contains(node.op):
            let output = try ShapeFolding.outputShape(of: node, input: shape, compiler: compiler)
            return KernelPlan(kernel: CopyKernel(count: shape.reduce(1, *)), operands: [x], outputShape: output)
        case "Concat": return try concat()
        case "Transpose":
            let perm = node.ints("perm") ?? Array(shape.indices.reversed())
            guard perm.sorted() == Array(shape.indices) else { throw compiler.shapeError(node, "perm \(perm) for rank \(shape.count)") }
            return KernelPlan(kernel: TransposeKernel(inputShape: shape, perm: perm), operands: [x], outputShape: perm.map { shape[$0] })
        case _ where Compiler.axisMapOperators.contains(node.op):
            let map = try compiler.axisMap(node, input: shape)
            // One that reads every index as it is (GhostNet's Slice of all its channels) is a copy, which the compiler aliases.
            if map.resultShape == shape, map.sources == shape.map(AxisMap.identity) {
                return KernelPlan(kernel: CopyKernel(count: shape.reduce(1, *)), operands: [x], outputShape: shape)
            }
            let fill = node.op == "Pad" ? try compiler.padValue(node)?.floatTensor?.data.first ?? 0 : 0
            return KernelPlan(kernel: AxisMapKernel(map: map, fill: fill), operands: [x], outputShape: map.resultShape)
        case "Gemm": return try gemm(x)
        case "MatMul": return try matmul(x)
        case "Softmax":
            let rank = shape.count
            var axis = node.int("axis", default: compiler.opset >= 13 ? -1 : 1)
            if axis < 0 { axis += rank }
            guard axis >= 0 && axis < rank else { throw compiler.shapeError(node, "axis \(axis) for rank \(rank)") }
            if axis == 0 { compiler.mixesImages = true }
            // Before opset 13, Softmax works on the input coerced to 2-D at `axis`.
            let kernel = compiler.opset >= 13
                ? SoftmaxKernel(outer: shape[..<axis].reduce(1, *), dimension: shape[axis], inner: shape[(axis + 1)...].reduce(1, *))
                : SoftmaxKernel(outer: shape[..<axis].reduce(1, *), dimension: shape[axis...].reduce(1, *), inner: 1)
            return KernelPlan(kernel: kernel, operands: [x], outputShape: shape)
        case _ where ConstantFolding.loadTimeOnly.contains(node.op):
            throw compiler.fail(node, "\(node.op) is supported only on values known at load (the shape computations exporters write)")
        default:
            throw compiler.fail(node, "not supported")
        }
    }

    /// The node's inputs known at load, by name.
    static func constants(of node: Node, _ inputs: [CompiledValue?]) -> [String: Constant] {
        var constants: [String: Constant] = [:]
        for (name, value) in zip(node.inputs, inputs) {
            if case .constant(let constant)? = value { constants[name] = constant }
        }
        return constants
    }

    /// The Conv's plan; `planeWeights` stand for its weights where a 3-D Conv runs as a 2-D one.
    private func convolution(_ x: CompiledValue, planeWeights: Tensor? = nil) throws(InferenceError) -> KernelPlan {
        let shape = x.shape
        if shape.count == 5, let plan = try convolutionOverMergedColumns(x) { return plan }
        guard shape.count == 4 else {
            throw compiler.fail(node, "only 2-D convolution (NCHW input), and 3-D convolution whose kernel spans one value of the last "
                + "axis (weights known at load, stride 1 on the last two axes, dilation 1 and no padding on the last, explicit pads), "
                + "are supported, got \(shape)")
        }
        guard let weights = try planeWeights == nil ? floatConstant(1) : planeWeights else { throw compiler.fail(node, "weights must be known at load") }
        guard weights.shape.count == 4 else { throw compiler.shapeError(node, "weights \(weights.shape) are not 4-D") }
        let groups = node.int("group", default: 1)
        guard groups > 0, shape[1] % groups == 0, weights.shape[0] % groups == 0, weights.shape[1] * groups == shape[1] else {
            throw compiler.shapeError(node, "weights \(weights.shape) with \(groups) groups do not fit input \(shape)")
        }
        if let kernelShape = node.ints("kernel_shape"), kernelShape != Array(weights.shape[2...]) {
            throw compiler.shapeError(node, "kernel_shape \(kernelShape) differs from the weights' \(Array(weights.shape[2...]))")
        }
        let bias = try floatConstant(2)
        if let bias, bias.count != weights.shape[0] { throw compiler.shapeError(node, "bias of \(bias.count) for \(weights.shape[0]) channels") }
        let window = try Window2D(node: node, kernel: (weights.shape[2], weights.shape[3]), input: (shape[2], shape[3]))
        let activation = node.fusedActivation
        // A convolution of a value known at load (a positional encoding computed in the graph, EdgeNeXt's
        // and XCiT's) runs once at load, on NCHW (`Compiler.evaluate`).
        let known = x.constant != nil
        // Its work bounded (in floating point: a hostile model's sizes would overflow integers).
        let work = [shape[0], weights.shape[0], window.output.h, window.output.w, weights.shape[1], window.kernel.h, window.kernel.w]
            .reduce(1.0) { $0 * Double($1) }
        if known, work > Double(1 << 28) {
            throw compiler.fail(node, "a convolution of a value known at load of \(work) multiply-adds is too large to evaluate at load (at most 2^28)")
        }
        let loops = compiler.kernels.loops, (inChannels, outChannels) = (shape[1], weights.shape[0])
        // A 1x1 convolution of a 1x1 plane (squeeze-excitation's layers) is a product of rows,
        // one per image, by the transposed weights: on packed panels where the build has them
        // (sgemm took 6 times ONNX Runtime's time on these one-column products). So too inside a chain
        // on channel blocks, whose plans would unroll the one position into panels of 16, 15 wasted.
        if let multiply = loops.packedProduct, groups == 1, window.kernel == (1, 1), window.input == (1, 1), window.output == (1, 1),
           window.pads == (0, 0, 0, 0) {
            var product = MatMulKernel.packed(m: shape[0], n: outChannels, k: inChannels, weights: weights.data, transposed: true,
                                              bias: bias.map(compiler.store), multiply: multiply, store: compiler.store)
            product.activation = activation
            return KernelPlan(kernel: product, operands: [x], outputShape: [shape[0], outChannels, 1, 1])
        }
        // Marked by ConvolutionGroups.channelBlockedChains: the channel-blocked plans first, where the shape suits them.
        let blocked: (any DirectMethod)? = node.int(IRAttribute.channelBlocked, default: 0) == 0 || known ? nil
            : BlockedPointwisePlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                   bias: bias, loops: loops, store: compiler.store) as (any DirectMethod)?
            ?? BlockedDepthwisePlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                    bias: bias, loops: loops, store: compiler.store)
            ?? (compiler.winograd ? WinogradPlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups,
                                                 weights: weights, bias: bias, loops: loops, store: compiler.store) : nil)
            ?? BlockedConvolutionPlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                     bias: bias, loops: loops, store: compiler.store)
        let direct: (any DirectMethod)? = blocked ??
            DirectConvolutionPlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                  bias: bias, loops: loops, threads: compiler.threads, store: compiler.store)
            ?? TransposedPointwisePlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                       bias: bias, loops: loops, store: compiler.store)
            // Pointwise ones over planes not whole strips (RexNet's and ShuffleNet's 14x14 and 7x7) beat
            // the panels, which compute as many positions and copy their input first.
            ?? (loops.panelProducts ? DirectConvolutionPlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups,
                                                            weights: weights, bias: bias, loops: loops, threads: compiler.threads,
                                                            beforePanels: true, store: compiler.store) : nil)
            ?? PanelConvolutionPlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                    bias: bias, loops: loops, store: compiler.store)
            ?? DepthwiseLanesPlan(window: window, inChannels: inChannels, outChannels: outChannels, groups: groups, weights: weights,
                                  bias: bias, loops: loops, store: compiler.store)
        let kernel = ConvolutionKernel(batch: shape[0], inChannels: shape[1], outChannels: weights.shape[0], groups: groups,
                                       window: window, weights: direct?.weights ?? compiler.store(weights),
                                       bias: bias.map(compiler.store), activation: activation, direct: direct)
        return KernelPlan(kernel: kernel, operands: [x], outputShape: [shape[0], weights.shape[0], window.output.h, window.output.w])
    }

    private func batchNorm(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        // (Known at load, ConstantFolding evaluates it; a run-time value's own statistics have no kernel.)
        if node.inTrainingMode { throw compiler.fail(node, "in training mode is supported only on values known at load") }
        let shape = x.shape
        guard shape.count >= 2, let gamma = try floatConstant(1), let beta = try floatConstant(2),
              let mean = try floatConstant(3), let variance = try floatConstant(4),
              [gamma, beta, mean, variance].allSatisfy({ $0.count == shape[1] }) else {
            throw compiler.fail(node, "needs constant scale, bias, mean and variance of one value per channel")
        }
        let epsilon = node.float("epsilon", default: 1e-5)
        let scale = (0..<shape[1]).map { gamma.data[$0] / (variance.data[$0] + epsilon).squareRoot() }
        let shift = (0..<shape[1]).map { beta.data[$0] - mean.data[$0] * scale[$0] }
        return KernelPlan(kernel: ChannelAffineKernel(batch: shape[0], plane: shape[2...].reduce(1, *), scale: scale, shift: shift),
                          operands: [x], outputShape: shape)
    }

    /// ONNX's LayerNormalization (the axes from `axis` on), or the engine's over a run of
    /// neighbouring axes (`IRAttribute.normalizedAxes`, set where a Transpose was pushed through
    /// one or a decomposed one was recognised).
    private func layerNorm(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        let shape = x.shape
        let axes: [Int]
        if let given = node.ints(IRAttribute.normalizedAxes) {
            axes = try ShapeFolding.normalize(given, rank: shape.count, node: node, compiler: compiler).sorted()
            guard let first = axes.first, axes == Array(first..<(first + axes.count)) else {
                throw compiler.fail(node, "normalised axes \(axes) are not neighbours")
            }
        } else {
            let axis = try ShapeFolding.normalize([node.int("axis", default: -1)], rank: shape.count, node: node, compiler: compiler)[0]
            axes = Array(axis..<shape.count)
        }
        let first = axes.first ?? shape.count, end = first + axes.count
        if first == 0 { compiler.mixesImages = true }
        let length = shape[first..<end].reduce(1, *)
        guard let scale = try floatConstant(1), scale.count == length || scale.count == 1 else {
            throw compiler.fail(node, "needs a constant scale of \(length) values (the normalised axes)")
        }
        let bias = try floatConstant(2)
        if let bias, bias.count != length && bias.count != 1 { throw compiler.shapeError(node, "bias of \(bias.count) for \(length) normalised values") }
        // One value in all is repeated to one per position.
        func perPosition(_ values: [Float]) -> [Float] { values.count == 1 ? Array(repeating: values[0], count: length) : values }
        return KernelPlan(kernel: LayerNormKernel(outer: shape[..<first].reduce(1, *), length: length, inner: shape[end...].reduce(1, *),
                                                  epsilon: node.float("epsilon", default: 1e-5), scale: perPosition(scale.data),
                                                  bias: bias.map { perPosition($0.data) }),
                          operands: [x], outputShape: shape)
    }

    /// InstanceNormalization (each image's channel normalised over its positions) and
    /// GroupNormalization (each group of channels over its channels' positions), a scale and bias
    /// per channel (per group before opset 21).
    private func channelGroupNorm(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        let shape = x.shape
        guard shape.count >= 2 else { throw compiler.shapeError(node, "needs N and C axes, got \(shape)") }
        let channels = shape[1], plane = shape[2...].reduce(1, *)
        guard shape.allSatisfy({ $0 > 0 }) else { throw compiler.shapeError(node, "cannot normalise the empty input \(shape)") }
        let groups = node.op == "InstanceNormalization" ? channels : node.int("num_groups", default: 0)
        guard groups > 0, channels % groups == 0 else { throw compiler.shapeError(node, "num_groups \(groups) does not divide \(channels) channels") }
        // GroupNormalization before opset 21 scales per group: each group's value for all its channels.
        let perGroup = node.op == "GroupNormalization" && compiler.opset < 21
        func perChannel(_ index: Int) throws(InferenceError) -> [Float] {
            guard let values = try floatConstant(index), values.count == (perGroup ? groups : channels) else {
                throw compiler.fail(node, "needs a constant \(index == 1 ? "scale" : "bias") of one value per \(perGroup ? "group" : "channel")")
            }
            return perGroup ? (0..<channels).map { values.data[$0 / (channels / groups)] } : values.data
        }
        let kernel = LayerNormKernel(outer: shape[0] * groups, length: channels / groups * plane, inner: 1,
                                     epsilon: node.float("epsilon", default: 1e-5), scale: try perChannel(1), bias: try perChannel(2),
                                     scaleRun: plane, rowsPerImage: groups)
        return KernelPlan(kernel: kernel, operands: [x], outputShape: shape)
    }

    /// A 3-D Conv of input [N, C, A, B, D] whose kernel spans one value of the last axis (weights
    /// [O, I, KA, KB, 1] known at load), with stride and dilation 1 there and no padding, and
    /// stride 1 on the middle axis, as a 2-D one over the same floats seen as [N, C, A, B·D]: the
    /// kernel's columns D apart (dilation D·dB) and the column padding D times as wide, so that
    /// each of the D interleaved columns is convolved on its own. Its output [N, O, A', B'·D] is
    /// [N, O, A', B', D] in the same order (LambdaNet's position lambdas, kernel [r, r, 1]).
    /// Nil for any other 3-D Conv.
    private func convolutionOverMergedColumns(_ x: CompiledValue) throws(InferenceError) -> KernelPlan? {
        guard case .runtime(let id, let shape) = x, let weights = try floatConstant(1), weights.shape.count == 5, weights.shape[4] == 1,
              node.string("auto_pad", default: "NOTSET") == "NOTSET",
              case let strides = node.ints("strides") ?? [1, 1, 1], strides.count == 3, strides[1] == 1, strides[2] == 1,
              case let dilations = node.ints("dilations") ?? [1, 1, 1], dilations.count == 3, dilations[2] == 1,
              case let pads = node.ints("pads") ?? [0, 0, 0, 0, 0, 0], pads.count == 6, pads[2] == 0, pads[5] == 0,
              case let kernelShape = Array(weights.shape[2...]), node.ints("kernel_shape") ?? kernelShape == kernelShape,
              dilations.allSatisfy({ $0 > 0 }), pads.allSatisfy({ $0 >= 0 }),
              (dilations + pads).allSatisfy({ $0 <= ShapeMath.maximumElements })  // times the last axis's length, without overflow
        else { return nil }
        let depth = shape[4]
        var plane = node
        plane.attributes["kernel_shape"] = .ints(Array(kernelShape.prefix(2)))
        plane.attributes["strides"] = .ints([strides[0], 1])
        plane.attributes["dilations"] = .ints([dilations[0], dilations[1] * depth])
        plane.attributes["pads"] = .ints([pads[0], pads[1] * depth, pads[3], pads[4] * depth])
        let planeInput = CompiledValue.runtime(id: id, shape: [shape[0], shape[1], shape[2], shape[3] * depth])
        let plan = try OperatorCompiler(compiler: compiler, node: plane, inputs: inputs)
            .convolution(planeInput, planeWeights: Tensor(shape: Array(weights.shape.prefix(4)), data: weights.data))
        let output = plan.outputShape
        return KernelPlan(kernel: plan.kernel, operands: plan.operands, outputShape: [output[0], output[1], output[2], output[3] / depth, depth])
    }

    /// Col2Im of columns [N, C·KH·KW, L] into [N, C, H, W], image_shape and block_shape known at
    /// load; L must be the number of block positions the window (strides, pads, dilations) has.
    private func columnsToImage(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        let shape = x.shape
        guard let image = try compiler.constantInput(node, 1)?.integers, let block = try compiler.constantInput(node, 2)?.integers,
              image.count == 2, block.count == 2 else {
            throw compiler.fail(node, "only 2-D images are supported (image_shape and block_shape two-element constants)")
        }
        guard shape.count == 3, (image + block).allSatisfy({ $0 > 0 && $0 <= ShapeMath.maximumElements }),
              shape[1] % (block[0] * block[1]) == 0 else {
            throw compiler.shapeError(node, "input \(shape) is not [N, C·\(block[0])·\(block[1]), L] for image \(image)")
        }
        let window = try Window2D(node: node, kernel: (block[0], block[1]), input: (image[0], image[1]))
        guard window.output.h * window.output.w == shape[2] else {
            throw compiler.shapeError(node, "\(shape[2]) columns for \(window.output.h)x\(window.output.w) block positions")
        }
        let channels = shape[1] / (block[0] * block[1])
        return KernelPlan(kernel: ColumnsToImageKernel(batch: shape[0], channels: channels, window: window), operands: [x],
                          outputShape: [shape[0], channels, image[0], image[1]])
    }

    private func pooling(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        let shape = x.shape
        guard shape.count == 4, let kernelShape = node.ints("kernel_shape"), kernelShape.count == 2 else {
            throw compiler.fail(node, "only 1-D and 2-D pooling (NCL or NCHW input, a kernel_shape of one or two values) is supported")
        }
        let window = try Window2D(node: node, kernel: (kernelShape[0], kernelShape[1]), input: (shape[2], shape[3]),
                                  ceilMode: node.int("ceil_mode", default: 0) == 1)
        let mode: PoolingKernel.Mode = node.op == "MaxPool" ? .max : .average(countIncludePad: node.int("count_include_pad", default: 0) == 1)
        // A bias (input 1) and activation come from a pointwise convolution moved before the pool.
        let bias = try floatConstant(1)
        if let bias, bias.count != shape[1] { throw compiler.shapeError(node, "bias of \(bias.count) for \(shape[1]) channels") }
        return KernelPlan(kernel: PoolingKernel(batch: shape[0], channels: shape[1], window: window, mode: mode, bias: bias?.data,
                                                activation: node.fusedActivation),
                          operands: [x], outputShape: [shape[0], shape[1], window.output.h, window.output.w])
    }

    private func concat() throws(InferenceError) -> KernelPlan {
        let values = inputs.compactMap { $0 }
        guard !values.isEmpty else { throw compiler.shapeError(node, "has no inputs") }
        let rank = values[0].shape.count
        var axis = node.int("axis", default: 0)
        if axis < 0 { axis += rank }
        guard axis >= 0 && axis < rank else { throw compiler.shapeError(node, "axis \(axis) for rank \(rank)") }
        for value in values where value.shape.count != rank || value.shape.enumerated().contains(where: { $0.offset != axis && $0.element != values[0].shape[$0.offset] }) {
            throw compiler.shapeError(node, "cannot concatenate \(value.shape) with \(values[0].shape) along axis \(axis)")
        }
        let inner = values[0].shape[(axis + 1)...].reduce(1, *)
        var output = values[0].shape
        output[axis] = values.map { $0.shape[axis] }.reduce(0, +)
        return KernelPlan(kernel: ConcatKernel(outer: values[0].shape[..<axis].reduce(1, *), chunks: values.map { $0.shape[axis] * inner }),
                          operands: values, outputShape: output)
    }

    private func gemm(_ a: CompiledValue) throws(InferenceError) -> KernelPlan {
        let b = try input(1)
        guard a.shape.count == 2, b.shape.count == 2 else { throw compiler.shapeError(node, "Gemm takes 2-D A and B, got \(a.shape) and \(b.shape)") }
        let transA = node.int("transA", default: 0) == 1, transB = node.int("transB", default: 0) == 1
        let (m, k) = transA ? (a.shape[1], a.shape[0]) : (a.shape[0], a.shape[1])
        let (kb, n) = transB ? (b.shape[1], b.shape[0]) : (b.shape[0], b.shape[1])
        guard k == kb else { throw compiler.shapeError(node, "A is \(a.shape) and B is \(b.shape): inner dimensions differ") }
        let alpha = node.float("alpha", default: 1), beta = node.float("beta", default: 1)
        if let packed = try packedGemm(a, m: m, n: n, k: k, transA: transA, transB: transB, alpha: alpha, beta: beta) { return packed }
        var operands = [a, b]
        var cStrides: (m: Int, n: Int)?
        if let c = inputs.count > 2 ? inputs[2] : nil {
            let padded = [Int](repeating: 1, count: 2 - min(c.shape.count, 2)) + c.shape.suffix(2)
            guard (padded[0] == m || padded[0] == 1) && (padded[1] == n || padded[1] == 1) else {
                throw compiler.shapeError(node, "C \(c.shape) does not broadcast to [\(m), \(n)]")
            }
            cStrides = (padded[0] == 1 ? 0 : padded[1], padded[1] == 1 ? 0 : 1)
            operands.append(c)
        }
        return KernelPlan(kernel: GemmKernel(m: m, n: n, k: k, transA: transA, transB: transB, alpha: alpha, beta: beta, cStrides: cStrides),
                          operands: operands, outputShape: [m, n])
    }

    /// A Gemm whose B is constant and whose C is absent or one constant row (a linear layer's
    /// bias) as a MatMul by packed panels: alpha folded into the panels, beta · C into the bias;
    /// nil where the build has no packed loop or the Gemm is not of that form (or is empty).
    private func packedGemm(_ a: CompiledValue, m: Int, n: Int, k: Int, transA: Bool, transB: Bool, alpha: Float,
                            beta: Float) throws(InferenceError) -> KernelPlan? {
        guard let multiply = compiler.kernels.loops.packedProduct, !transA, k > 0, n > 0, let b = try floatConstant(1) else { return nil }
        var bias: [Float]?
        if inputs.count > 2, inputs[2] != nil {
            guard let c = try floatConstant(2), c.count == n || c.count == 1, c.shape.dropLast().allSatisfy({ $0 == 1 }) else { return nil }
            bias = (0..<n).map { beta * c.data[c.count == 1 ? 0 : $0] }
        }
        let product = MatMulKernel.packed(m: m, n: n, k: k, weights: b.data, transposed: transB, scale: alpha,
                                          bias: bias.map { compiler.store(Tensor(shape: [n], data: $0)) }, multiply: multiply,
                                          store: compiler.store)
        return KernelPlan(kernel: product, operands: [a], outputShape: [m, n])
    }

    private func matmul(_ a: CompiledValue) throws(InferenceError) -> KernelPlan {
        let b = try input(1)
        guard a.shape.count >= 2, b.shape.count >= 2 else { throw compiler.fail(node, "MatMul of 1-D operands is not supported") }
        let m = a.shape[a.shape.count - 2], k = a.shape.last!, n = b.shape.last!
        guard b.shape[b.shape.count - 2] == k else { throw compiler.shapeError(node, "A is \(a.shape) and B is \(b.shape): inner dimensions differ") }
        let batchA = Array(a.shape.dropLast(2)), batchB = Array(b.shape.dropLast(2))
        guard let batch = BinaryKernel.broadcast(batchA, batchB) else {
            throw compiler.shapeError(node, "batch dimensions \(batchA) and \(batchB) do not broadcast")
        }
        let bias = try floatConstant(2)
        if let bias, bias.count != n { throw compiler.shapeError(node, "bias of \(bias.count) for \(n) columns") }
        let biasPointer = bias.map(compiler.store)
        // One B for every batch index: A's matrices lie one after another, so they are one matrix of all their rows.
        if batchB.reduce(1, *) == 1 {
            let rows = batchA.reduce(1, *) * m
            // A constant B is packed once into panels, where the build has the loop for them.
            if let multiply = compiler.kernels.loops.packedProduct, k > 0, n > 0, case .constant(let constant) = b, let weights = constant.floatTensor {
                return KernelPlan(kernel: MatMulKernel.packed(m: rows, n: n, k: k, weights: weights.data, bias: biasPointer, multiply: multiply,
                                                              store: compiler.store),
                                  operands: [a], outputShape: batch + [m, n])
            }
            return KernelPlan(kernel: runtimeProduct(m: rows, n: n, k: k, batchOffsets: [(0, 0)], bias: biasPointer), operands: [a, b],
                              outputShape: batch + [m, n])
        }
        let stridesA = BinaryKernel.broadcastStrides(batchA, to: batch), stridesB = BinaryKernel.broadcastStrides(batchB, to: batch)
        let count = batch.reduce(1, *)
        let batchStrides = strides(of: batch)
        let offsets = (0..<count).map { index -> (a: Int, b: Int) in
            var a = 0, b = 0
            for axis in batch.indices {
                let position = index / batchStrides[axis] % batch[axis]
                a += position * stridesA[axis]
                b += position * stridesB[axis]
            }
            return (a * m * k, b * k * n)
        }
        return KernelPlan(kernel: runtimeProduct(m: m, n: n, k: k, batchOffsets: offsets, bias: biasPointer), operands: [a, b],
                          outputShape: batch + [m, n])
    }

    /// A product of two values known only at run time: through packed panels where the build's products beat sgemm.
    private func runtimeProduct(m: Int, n: Int, k: Int, batchOffsets: [(a: Int, b: Int)], bias: UnsafePointer<Float>?) -> MatMulKernel {
        var product = MatMulKernel(m: m, n: n, k: k, batchOffsets: batchOffsets, bias: bias)
        let loops = compiler.kernels.loops
        if loops.panelProducts, k > 0, n > 0 { product.runtimePanels = loops.packedProduct }
        return product
    }
}
