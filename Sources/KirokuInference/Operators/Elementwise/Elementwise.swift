import Foundation

/// Add, Sub, Mul, Div, Pow, Min, Max with NumPy-style broadcasting.
struct BinaryKernel: Kernel {
    enum Operation {
        case add, sub, mul, div, pow, min, max

        /// The operation of an ONNX operator of two inputs.
        static let byOperator: [String: Operation] = ["Add": .add, "Sub": .sub, "Mul": .mul, "Div": .div, "Pow": .pow, "Min": .min, "Max": .max]
    }

    let operation: Operation
    let outputShape: [Int]
    /// For each operand, its stride along each output axis (0 where it is broadcast).
    let operandStrides: [[Int]]
    let sameShape: Bool
    /// Where one operand is whole and the other holds one value per leading index, broadcast over
    /// the trailing axes (squeeze-excitation's [N, C, H, W] × [N, C, 1, 1]): which operand is
    /// whole, and how many trailing elements share each value.
    let planes: (whole: Int, inner: Int)?

    init(operation: Operation, shapes: [[Int]], outputShape: [Int]) {
        self.operation = operation
        self.outputShape = outputShape
        operandStrides = shapes.map { Self.broadcastStrides($0, to: outputShape) }
        sameShape = shapes.allSatisfy { $0 == outputShape }
        planes = sameShape ? nil : [0, 1].lazy.compactMap { whole -> (whole: Int, inner: Int)? in
            guard shapes[whole] == outputShape else { return nil }
            let other = [Int](repeating: 1, count: outputShape.count - shapes[1 - whole].count) + shapes[1 - whole]
            // The other operand: whole on the axes before some axis, ones from there on.
            guard let split = (0...outputShape.count).first(where: { axis in
                other[..<axis] == outputShape[..<axis] && other[axis...].allSatisfy { $0 == 1 }
            }), split < outputShape.count else { return nil }
            return (whole, outputShape[split...].reduce(1, *))
        }.first
    }

    @inline(__always)
    private func apply(_ a: Float, _ b: Float) -> Float {
        switch operation {
        case .add: a + b
        case .sub: a - b
        case .mul: a * b
        case .div: a / b
        case .pow: b == 2 ? a * a : b == 3 ? a * a * a : b == 0.5 ? a.squareRoot() : b == 1 ? a : powf(a, b)
        case .min: a.isNaN || b.isNaN ? .nan : Swift.min(a, b)
        case .max: a.isNaN || b.isNaN ? .nan : Swift.max(a, b)
        }
    }

    func run(_ context: KernelContext) {
        let a = context.inputs[0], b = context.inputs[1], y = context.outputs[0]
        let count = outputShape.reduce(1, *)
        if sameShape {
            // Split across the threads in blocks of 16K elements (64 KB of each operand).
            let block = 16 * 1024
            context.team.parallelFor((count + block - 1) / block) { index in
                for i in (index * block)..<min(count, (index + 1) * block) { y[i] = apply(a[i], b[i]) }
            }
            return
        }
        if let (whole, inner) = planes {
            let planeCount = count / max(inner, 1), full = context.inputs[whole], values = context.inputs[1 - whole]
            context.team.parallelFor(planeCount) { plane in
                let value = values[plane], source = full + plane * inner, target = y + plane * inner
                if whole == 0 {
                    for i in 0..<inner { target[i] = apply(source[i], value) }
                } else {
                    for i in 0..<inner { target[i] = apply(value, source[i]) }
                }
            }
            return
        }
        // Walk the output; the innermost axis is a strided inner loop for each operand.
        let rank = outputShape.count
        let inner = rank == 0 ? 1 : outputShape[rank - 1]
        let innerA = rank == 0 ? 0 : operandStrides[0][rank - 1], innerB = rank == 0 ? 0 : operandStrides[1][rank - 1]
        var index = [Int](repeating: 0, count: max(rank - 1, 0))
        var offset = 0
        while offset < count {
            var baseA = 0, baseB = 0
            for axis in index.indices {
                baseA += index[axis] * operandStrides[0][axis]
                baseB += index[axis] * operandStrides[1][axis]
            }
            for j in 0..<inner { y[offset + j] = apply(a[baseA + j * innerA], b[baseB + j * innerB]) }
            offset += inner
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < outputShape[axis] { break }
                index[axis] = 0
            }
        }
    }

    /// The strides with which `shape`, broadcast to `output`, is read along each output axis.
    static func broadcastStrides(_ shape: [Int], to output: [Int]) -> [Int] {
        let padded = [Int](repeating: 1, count: output.count - shape.count) + shape
        return zip(padded, strides(of: padded)).map { $0 == 1 ? 0 : $1 }
    }

    /// The broadcast shape of two shapes, or nil when they do not broadcast.
    static func broadcast(_ a: [Int], _ b: [Int]) -> [Int]? {
        let rank = max(a.count, b.count)
        let pa = [Int](repeating: 1, count: rank - a.count) + a, pb = [Int](repeating: 1, count: rank - b.count) + b
        var result: [Int] = []
        for (x, y) in zip(pa, pb) {
            guard x == y || x == 1 || y == 1 else { return nil }
            result.append(x == 1 ? y : x)
        }
        return result
    }
}

/// A standalone activation (Relu, Clip, ...).
struct ActivationKernel: Kernel {
    let activation: Activation
    let count: Int

    func run(_ context: KernelContext) {
        context.outputs[0].update(from: context.inputs[0], count: count)
        activation.apply(UnsafeMutableBufferPointer(start: context.outputs[0], count: count), loops: context.loops)
    }
}

/// BatchNormalization in inference mode as a per-channel scale and shift (when it follows no
/// convolution it can be folded into), or a Mul by per-channel constants (tf2onnx's batch norm
/// before a Relu, as DenseNet's layers start), with an activation after it when one follows; over
/// NCHW planes, or over channel blocks (NCHW8c) where a chain of convolutions keeps its values.
struct ChannelAffineKernel: Kernel {
    let batch: Int
    let plane: Int
    let scale: [Float]
    let shift: [Float]
    /// Applied as each plane or block is written.
    var activation: Activation? = nil
    /// Input and output in channel blocks: 8 channels a vector, a block per loop index.
    var overChannelBlocks = false

    var variant: String? { overChannelBlocks ? "over channel blocks" : nil }

    func run(_ context: KernelContext) {
        let channels = scale.count
        if overChannelBlocks {
            let blocks = channels / 8, blockFloats = plane * 8
            context.team.parallelFor(batch * blocks) { index in
                let first = (index % blocks) * 8
                let x = context.inputs[0] + index * blockFloats, y = context.outputs[0] + index * blockFloats
                scale.withUnsafeBufferPointer { scale in
                    shift.withUnsafeBufferPointer { shift in
                        let s = SIMD8<Float>(scale[first ..< first + 8]), b = SIMD8<Float>(shift[first ..< first + 8])
                        for p in 0..<plane {
                            let v = UnsafeRawPointer(x + p * 8).loadUnaligned(as: SIMD8<Float>.self)
                            UnsafeMutableRawPointer(y + p * 8).storeBytes(of: v * s + b, as: SIMD8<Float>.self)
                        }
                    }
                }
                activation?.apply(UnsafeMutableBufferPointer(start: y, count: blockFloats), loops: context.loops)
            }
            return
        }
        context.team.parallelFor(batch * channels) { p in
            let c = p % channels
            let x = context.inputs[0] + p * plane, y = context.outputs[0] + p * plane
            for i in 0..<plane { y[i] = x[i] * scale[c] + shift[c] }
            activation?.apply(UnsafeMutableBufferPointer(start: y, count: plane), loops: context.loops)
        }
    }
}

/// Squeeze-excitation's scale over channel blocks (NCHW8c): an [N, C, H, W] value times one
/// run-time value per channel ([N, C, 1, 1], or [1, C, 1, 1] for every image), a block per loop
/// index. The scale is laid out the same in both layouts, so it is read as it is.
struct BlockedChannelScaleKernel: Kernel {
    let batch: Int, channels: Int, plane: Int
    /// Which input is the value; the other is the scale.
    let value: Int
    /// Whether the scale holds values for each image (else one set for all).
    let scalePerImage: Bool

    var variant: String? { "over channel blocks" }

    func run(_ context: KernelContext) {
        let x = context.inputs[value], s = context.inputs[1 - value], y = context.outputs[0], blocks = channels / 8
        context.team.parallelFor(batch * blocks) { index in
            let scale = UnsafeRawPointer(s + (scalePerImage ? index : index % blocks) * 8).loadUnaligned(as: SIMD8<Float>.self)
            let source = UnsafeRawPointer(x + index * plane * 8), target = UnsafeMutableRawPointer(y + index * plane * 8)
            for p in 0..<plane {
                target.storeBytes(of: source.loadUnaligned(fromByteOffset: p * 32, as: SIMD8<Float>.self) * scale, toByteOffset: p * 32,
                                  as: SIMD8<Float>.self)
            }
        }
    }
}

extension Activation {
    /// Applies the activation in place, with `loops` (the chosen build's) where it has one.
    func apply(_ values: UnsafeMutableBufferPointer<Float>, loops: KernelLoops) {
        guard let start = values.baseAddress else { return }
        switch self {
        case .relu: loops.clamp(start, values.count, 0, .infinity)
        case .clip(let low, let high): loops.clamp(start, values.count, low, high)
        case .leakyRelu(let alpha): loops.leakyRelu(start, values.count, alpha)
        case .sigmoid: loops.sigmoid(start, values.count)
        case .hardSigmoid(let alpha, let beta): loops.hardSigmoid(start, values.count, alpha, beta)
        case .hardSwish: loops.hardSwish(start, values.count)
        case .function(.gelu): loops.gelu(start, values.count)
        case .function(.geluTanh): loops.geluTanh(start, values.count)
        case .function(.erf): loops.erf(start, values.count)
        case .function(.tanh): loops.tanh(start, values.count)
        case .function(.swish(let alpha)): loops.swish(start, values.count, alpha)
        case .function(.quantizeDequantize(let step)): step.apply(values)
        case .function(let function): for i in values.indices { values[i] = function(values[i]) }
        }
    }
}
