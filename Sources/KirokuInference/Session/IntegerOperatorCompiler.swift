/// The kernels of the integer operators that GraphPasses.lowerToIntegerOperators writes.
extension OperatorCompiler {
    func integerOperator(_ x: CompiledValue, second: CompiledValue?) throws(InferenceError) -> KernelPlan {
        let shape = x.shape, scales = node.floats(IRAttribute.integerScale) ?? []
        let levels = node.ints(IRAttribute.integerLevels).flatMap { $0.count == 2 ? Int32($0[0])...Int32($0[1]) : nil }
        switch node.op {
        case IROperator.quantize:
            guard let levels, scales.count == 1 else { throw compiler.fail(node, "needs a scale and levels") }
            return KernelPlan(kernel: QuantizeKernel(layout: LevelsLayout(shape: shape), scale: scales[0], bounds: levels),
                              operands: [x], outputShape: shape)
        case IROperator.dequantize:
            guard scales.count == 2 else { throw compiler.fail(node, "needs a scale and a shift") }
            return KernelPlan(kernel: DequantizeKernel(layout: LevelsLayout(shape: shape), scale: scales[0], shift: scales[1]),
                              operands: [x], outputShape: shape)
        case IROperator.integerMean:
            guard scales.count == 2, shape.count >= 3 else { throw compiler.fail(node, "needs a scale, a shift and an [N, C, spatial...] input") }
            return KernelPlan(kernel: IntegerMeanKernel(layout: LevelsLayout(shape: shape), scale: scales[0], shift: scales[1]),
                              operands: [x], outputShape: Array(shape.prefix(2)) + Array(repeating: 1, count: shape.count - 2))
        case IROperator.integerScale:
            guard let second, let levels, scales.count == 3 else { throw compiler.fail(node, "needs levels, factors, their scales and levels") }
            guard let output = BinaryKernel.broadcast(shape, second.shape), ShapeMath.count(output) != nil else {
                throw compiler.shapeError(node, "shapes \(shape) and \(second.shape) do not broadcast")
            }
            return KernelPlan(kernel: IntegerScaleKernel(levels: shape, factors: second.shape, output: output,
                                                         scaling: (scales[0], scales[1], scales[2]), bounds: levels),
                              operands: [x, second], outputShape: output)
        case IROperator.integerAdd:
            guard let second, let levels, scales.count == 2 else { throw compiler.fail(node, "needs two inputs, their scales and levels") }
            guard second.shape != shape else {
                return KernelPlan(kernel: IntegerAddKernel(count: shape.reduce(1, *), scales: (scales[0], scales[1]), bounds: levels),
                                  operands: [x, second], outputShape: shape)
            }
            guard let output = BinaryKernel.broadcast(shape, second.shape), ShapeMath.count(output) != nil else {
                throw compiler.shapeError(node, "shapes \(shape) and \(second.shape) do not broadcast")
            }
            return KernelPlan(kernel: IntegerAddKernel(a: shape, b: second.shape, output: output, scales: (scales[0], scales[1]), bounds: levels),
                              operands: [x, second], outputShape: output)
        case IROperator.integerMaxPool:
            guard let levels, scales.count == 3, shape.count == 4, let kernel = node.ints("kernel_shape"), kernel.count == 2 else {
                throw compiler.fail(node, "needs levels, scales, an NCHW input and a two-element kernel_shape")
            }
            let window = try Window2D(node: node, kernel: (kernel[0], kernel[1]), input: (shape[2], shape[3]),
                                      ceilMode: node.int("ceil_mode", default: 0) == 1)
            // Where the input's scale is the output's and no shift lies between, a level is its own level.
            let (scale, shift, divisor) = (scales[0], scales[1], scales[2])
            let requantization: IntegerMaxPoolKernel.Scaling? = scale == divisor && shift == 0 ? nil : (scale, shift, divisor)
            return KernelPlan(kernel: IntegerMaxPoolKernel(batch: shape[0], channels: shape[1], window: window, requantization: requantization,
                                                           bounds: levels),
                              operands: [x], outputShape: [shape[0], shape[1], window.output.h, window.output.w])
        default:
            return try integerConvolution(x, scales: scales, levels: levels)
        }
    }

    private func integerConvolution(_ x: CompiledValue, scales: [Float], levels: ClosedRange<Int32>?) throws(InferenceError) -> KernelPlan {
        guard case .tensor(.int64(let shape, let weights))? = node.attributes[IRAttribute.integerWeights], shape.count == 4 else {
            throw compiler.fail(node, "has no integer weights")
        }
        let matrix = node.int(IRAttribute.integerMatrix, default: 0) == 1, input = x.shape
        let (outChannels, groups) = (shape[0], node.int("group", default: 1))
        let offsets = node.floats(IRAttribute.integerOffset) ?? []
        guard scales.count == outChannels, offsets.count == outChannels else { throw compiler.fail(node, "needs a scale and offset per channel") }
        guard matrix ? input.count == 2 && input[1] == shape[1] : input.count == 4 && input[1] == shape[1] * groups && outChannels % groups == 0 else {
            throw compiler.shapeError(node, "weights \(shape) do not fit input \(input) in \(groups) groups")
        }
        let depthwise = groups > 1 && shape[1] == 1 && outChannels == groups
        let window = try Window2D(node: node, kernel: (shape[2], shape[3]), input: matrix ? (1, 1) : (input[2], input[3]))
        let pointwise = groups == 1 && window.kernel == (1, 1) && window.stride == (1, 1) && window.pads == (0, 0, 0, 0)
        let (inChannels, taps) = (shape[1], shape[2] * shape[3])
        let merged = depthwise ? 1 : IntegerConvolutionKernel.merged(groups: groups, outChannels: outChannels)
        // Direct where the bytes multiply whole quads of an ungrouped window's channels (a tap's
        // quads then start where its channels do), or where whole quads add at most a third (an
        // image's three channels as four) on weights padded with zeros.
        let quadChannels = IntegerConvolutionKernel.quadChannels(inChannels), windowed = groups == 1 && !pointwise && !depthwise
        let padded = windowed && quadChannels != inChannels && 3 * quadChannels <= 4 * inChannels
        let bytes = depthwise ? nil : padded
            ? bytePlan(IntegerConvolutionKernel.quadPadded(weights, outChannels: outChannels, inChannels: inChannels, taps: taps), groups: 1,
                       merged: 1, outChannels: outChannels, inChannels: quadChannels, taps: taps)
            : bytePlan(weights, groups: groups, merged: merged, outChannels: outChannels, inChannels: inChannels, taps: taps)
        let direct = bytes != nil && windowed && (padded || inChannels % 4 == 0)
        let method: IntegerConvolutionKernel.Method = depthwise ? .depthwise : pointwise ? .rows : direct ? .direct : .unrolled
        // The int16 pairs where the bytes do not multiply (their count sizes the unrolled rows either way).
        let packed = bytes == nil ? IntegerConvolutionKernel.packed(weights, method: method, groups: groups, merged: merged, outChannels: outChannels,
                                                                    inChannels: inChannels, kernel: window.kernel, store: compiler.store) : nil
        var kernel = IntegerConvolutionKernel(batch: input[0], inChannels: input[1], outChannels: outChannels, groups: groups, merged: merged,
                                              window: window, method: method,
                                              pairs: packed?.pairs ?? (merged * inChannels * taps + 1) / 2, weights: packed?.weights,
                                              scale: compiler.store(Tensor(shape: [outChannels], data: scales)),
                                              offset: compiler.store(Tensor(shape: [outChannels], data: offsets)), bounds: levels,
                                              gate: try gate(), bytes: bytes)
        kernel.planSplit(threads: compiler.threads)
        let output = matrix ? [input[0], outChannels] : [input[0], outChannels, window.output.h, window.output.w]
        return KernelPlan(kernel: kernel, operands: [x], outputShape: output)
    }

    /// The SiLU or hard-swish the convolution computes before its store, at its output's scale.
    private func gate() throws(InferenceError) -> IntegerLoops.Gate? {
        guard case .activation(let activation)? = node.attributes[IRAttribute.integerGate] else { return nil }
        let scale = node.float(IRAttribute.integerGateScale, default: 1)
        switch activation {
        case .hardSwish: return (true, scale)
        case .function(.swish(alpha: 1)): return (false, scale)
        default: throw compiler.fail(node, "has an activation its integer kernels do not compute")
        }
    }

    /// The 8-bit products' plan, where the integer build has them, the input's levels span at most
    /// 256 values around zero, and every weight lies within int8.
    private func bytePlan(_ weights: [Int64], groups: Int, merged: Int, outChannels: Int, inChannels: Int, taps: Int)
        -> IntegerConvolutionKernel.BytePlan? {
        let inputLevels = node.ints(IRAttribute.integerInputLevels)
        guard let loops = compiler.integerKernels.integer.bytes, let inputLevels, inputLevels.count == 2,
              inputLevels[0] <= 0, inputLevels[1] >= 0, inputLevels[1] - inputLevels[0] <= 255,
              let packed = IntegerConvolutionKernel.packedBytes(weights, groups: groups, merged: merged, outChannels: outChannels, inChannels: inChannels, taps: taps,
                                                                shift: Int16(-inputLevels[0])) else { return nil }
        return IntegerConvolutionKernel.BytePlan(weights: compiler.store(packed.weights), starts: compiler.store(packed.starts),
                                                 quads: packed.quads, shift: Int16(-inputLevels[0]), loops: loops)
    }
}
