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
    /// Where one operand is whole and the other holds one value per leading index, broadcast over
    /// the trailing axes (squeeze-excitation's [N, C, H, W] × [N, C, 1, 1]): which operand is
    /// whole, and how many trailing elements share each value.
    let planes: (whole: Int, inner: Int)?
    /// The output with neighbouring axes merged where both operands read them as one (a value
    /// of the same shape is one axis, a bias over a trailing plane two), and each operand's
    /// stride along each merged axis (0 where it is broadcast).
    let mergedShape: [Int]
    let mergedStrides: [[Int]]

    init(operation: Operation, shapes: [[Int]], outputShape: [Int]) {
        self.operation = operation
        self.outputShape = outputShape
        let operandStrides = shapes.map { Self.broadcastStrides($0, to: outputShape) }
        planes = shapes.allSatisfy({ $0 == outputShape }) ? nil : [0, 1].lazy.compactMap { whole -> (whole: Int, inner: Int)? in
            guard shapes[whole] == outputShape else { return nil }
            let other = [Int](repeating: 1, count: outputShape.count - shapes[1 - whole].count) + shapes[1 - whole]
            // The other operand: whole on the axes before some axis, ones from there on.
            guard let split = (0...outputShape.count).first(where: { axis in
                other[..<axis] == outputShape[..<axis] && other[axis...].allSatisfy { $0 == 1 }
            }), split < outputShape.count else { return nil }
            return (whole, outputShape[split...].reduce(1, *))
        }.first
        var shape: [Int] = [], strides: [[Int]] = [[], []]
        for axis in outputShape.indices where outputShape[axis] != 1 {
            let size = outputShape[axis], (a, b) = (operandStrides[0][axis], operandStrides[1][axis])
            if let last = shape.indices.last, strides[0][last] == a * size, strides[1][last] == b * size {
                shape[last] *= size
                (strides[0][last], strides[1][last]) = (a, b)
            } else {
                shape.append(size)
                strides[0].append(a)
                strides[1].append(b)
            }
        }
        (mergedShape, mergedStrides) = shape.isEmpty ? ([1], [[0], [0]]) : (shape, strides)
    }

    func run(_ context: KernelContext) {
        switch operation {
        case .add: run(context, Sum.self)
        case .sub: run(context, Difference.self)
        case .mul: run(context, Product.self)
        case .div: run(context, Quotient.self)
        case .pow:
            // One exponent for every base (StarReLU's square): the loop picked once, so that it vectorises
            // (1/2 stays powf's: a square root differs at −0 and −∞).
            guard mergedStrides[1].allSatisfy({ $0 == 0 }) else { return run(context, Power.self) }
            switch context.inputs[1][0] {
            case 2: run(context, Square.self)
            case 3: run(context, Cube.self)
            default: run(context, Power.self)
            }
        case .min: run(context, Least.self)
        case .max: run(context, Greatest.self)
        }
    }

    /// Rows of the merged last axis, shared out in pieces of about 16K values: a long row in
    /// pieces, short rows in runs.
    private func run<Operation: ElementOperation>(_ context: KernelContext, _: Operation.Type) {
        let a = context.inputs[0], b = context.inputs[1], y = context.outputs[0]
        let rank = mergedShape.count, inner = mergedShape[rank - 1], count = outputShape.reduce(1, *)
        guard count > 0 else { return }
        let rows = count / inner
        let (strideA, strideB) = (mergedStrides[0][rank - 1], mergedStrides[1][rank - 1])
        let block = 16 * 1024, pieces = (inner + block - 1) / block, rowsPerUnit = pieces > 1 ? 1 : max(1, block / inner)
        let units = pieces > 1 ? rows * pieces : (rows + rowsPerUnit - 1) / rowsPerUnit
        let (shape, strides) = (mergedShape, mergedStrides)
        context.team.parallelFor(units) { unit in
            let first = pieces > 1 ? unit / pieces : unit * rowsPerUnit, last = min(rows, first + rowsPerUnit)
            let start = pieces > 1 ? unit % pieces * block : 0, count = min(inner - start, pieces > 1 ? block : inner)
            for row in first..<last {
                var rest = row, offsetA = start * strideA, offsetB = start * strideB
                for axis in stride(from: rank - 2, through: 0, by: -1) {
                    let index = rest % shape[axis]
                    rest /= shape[axis]
                    offsetA += index * strides[0][axis]
                    offsetB += index * strides[1][axis]
                }
                Self.row(Operation.self, a + offsetA, strideA, b + offsetB, strideB, y + row * inner + start, count)
            }
        }
    }

    /// y[i] = a[i · strideA] ∘ b[i · strideB]: contiguous or broadcast operands as loops the
    /// compiler vectorises.
    @inline(__always)
    private static func row<Operation: ElementOperation>(_: Operation.Type, _ a: UnsafePointer<Float>, _ strideA: Int, _ b: UnsafePointer<Float>,
                                                         _ strideB: Int, _ y: UnsafeMutablePointer<Float>, _ count: Int) {
        switch (strideA, strideB) {
        case (1, 1): for i in 0..<count { y[i] = Operation.apply(a[i], b[i]) }
        case (1, 0): let value = b[0]; for i in 0..<count { y[i] = Operation.apply(a[i], value) }
        case (0, 1): let value = a[0]; for i in 0..<count { y[i] = Operation.apply(value, b[i]) }
        default: for i in 0..<count { y[i] = Operation.apply(a[i * strideA], b[i * strideB]) }
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

/// One of BinaryKernel's operations on two floats, as a type so each loop is specialised for it.
protocol ElementOperation {
    static func apply(_ a: Float, _ b: Float) -> Float
}

enum Sum: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a + b }
}

enum Difference: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a - b }
}

enum Product: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a * b }
}

enum Quotient: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a / b }
}

enum Power: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float {
        b == 2 ? a * a : b == 3 ? a * a * a : b == 1 ? a : powf(a, b)
    }
}

/// Pow by an exponent of 2 or 3 for every base (b is that exponent).
enum Square: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a * a }
}

enum Cube: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a * a * a }
}

/// Min and Max: NaN when either operand is.
enum Least: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a.isNaN || b.isNaN ? .nan : min(a, b) }
}

enum Greatest: ElementOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a.isNaN || b.isNaN ? .nan : max(a, b) }
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
    /// (An Add of one constant per channel after the step joins it: Compiler.fuseShiftIntoLastAffine.)
    var shift: [Float]
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
        // Loops of their own, which vectorise (through the function's switch, a value at a time: RoPE's Neg).
        case .function(.negate): for i in values.indices { values[i] = -values[i] }
        case .function(.absolute): for i in values.indices { values[i] = abs(values[i]) }
        case .function(let function): for i in values.indices { values[i] = function(values[i]) }
        }
    }
}
