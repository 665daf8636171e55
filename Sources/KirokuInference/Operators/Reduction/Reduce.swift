import Foundation

/// Reduction over a set of axes: the Reduce operators (Mean, Sum, Max, Min, Prod, L1, L2,
/// SumSquare, LogSum, LogSumExp), GlobalAveragePool and GlobalMaxPool.
struct ReduceKernel: Kernel {
    enum Mode {
        case mean, sum, max, min, product, l1, l2, sumSquare, logSum, logSumExp

        /// The reduction of an ONNX operator.
        static let byOperator: [String: Mode] = [
            "ReduceMean": .mean, "ReduceSum": .sum, "ReduceMax": .max, "ReduceMin": .min, "ReduceProd": .product,
            "ReduceL1": .l1, "ReduceL2": .l2, "ReduceSumSquare": .sumSquare, "ReduceLogSum": .logSum, "ReduceLogSumExp": .logSumExp,
        ]

        var initial: Float {
            switch self {
            case .max: -.infinity
            case .min: .infinity
            case .product: 1
            default: 0
            }
        }

        /// What one value adds to the running result.
        @inline(__always)
        func combine(_ a: Float, _ b: Float) -> Float {
            switch self {
            case .max: Swift.max(a, b)
            case .min: Swift.min(a, b)
            case .product: a * b
            case .l1: a + abs(b)
            case .l2, .sumSquare: a + b * b
            default: a + b
            }
        }

        /// The output from the running result over `count` values.
        @inline(__always)
        func finish(_ total: Float, count: Int) -> Float {
            switch self {
            case .mean: total / Float(count)
            case .l2: total.squareRoot()
            case .logSum: logf(total)
            default: total
            }
        }
    }

    let inputShape: [Int]
    let axes: Set<Int>
    let mode: Mode
    /// A QuantizeLinear → DequantizeLinear step each value goes through as it is read (a global
    /// average pool of rounded values; GraphPasses.fuseQuantizeDequantize), or nil.
    var rounding: QuantizationStep? = nil

    var variant: String? { rounding == nil ? nil : "of rounded values" }

    /// The same global pooling over channel-blocked input (NCHW8c), where this is one (over H and
    /// W of whole blocks of channels, averaged or maximised).
    var overChannelBlocks: BlockedGlobalPoolKernel? {
        guard inputShape.count == 4, axes == [2, 3], inputShape[1] % 8 == 0, mode == .mean || mode == .max, rounding == nil else { return nil }
        return BlockedGlobalPoolKernel(batch: inputShape[0], channels: inputShape[1], plane: inputShape[2] * inputShape[3], mode: mode)
    }

    /// LogSumExp keeps the sums of exp(x − max) beside the maxima.
    func scratchCount(threads: Int) -> Int {
        mode == .logSumExp ? inputShape.enumerated().map { axes.contains($0.offset) ? 1 : $0.element }.reduce(1, *) : 0
    }

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        let reduced = axes.map { inputShape[$0] }.reduce(1, *)
        if mode == .logSumExp {
            logSumExp(x, y, sums: context.scratch)
            return
        }
        // Fast path: the reduced axes are the trailing ones (global pooling over H, W).
        let trailing = axes == Set((inputShape.count - axes.count)..<inputShape.count)
        if trailing {
            let outer = inputShape.enumerated().filter { !axes.contains($0.offset) }.map(\.element).reduce(1, *)
            context.team.parallelFor(outer) { o in
                let values = x + o * reduced
                // Sums eight lanes at a time (a sequential sum waits on every addition), rounded first where a step is fused.
                let total = switch mode {
                case .mean, .sum: context.loops.sum(values, reduced, rounding?.loopsForm)
                case .l2, .sumSquare: Self.sumOfSquares(values, reduced)
                default: UnsafeBufferPointer(start: values, count: reduced).reduce(mode.initial, mode.combine)
                }
                y[o] = mode.finish(total, count: reduced)
            }
            return
        }
        // Reduced axes next to each other ([outer, reduced, inner], as a LayerNorm over channels of an
        // NCHW value has them): rows of `inner` values combined into one, vectorised along the row.
        if let first = axes.min(), let last = axes.max(), last - first + 1 == axes.count {
            let inner = inputShape[(last + 1)...].reduce(1, *), outer = inputShape[..<first].reduce(1, *)
            let width = 4096, pieces = (inner + width - 1) / width
            context.team.parallelFor(outer * pieces) { index in
                let o = index / pieces, start = index % pieces * width, count = min(width, inner - start)
                let output = y + o * inner + start
                output.update(repeating: mode.initial, count: count)
                for r in 0..<reduced {
                    let row = x + (o * reduced + r) * inner + start
                    for i in 0..<count { output[i] = mode.combine(output[i], row[i]) }
                }
                for i in 0..<count { output[i] = mode.finish(output[i], count: reduced) }
            }
            return
        }
        let outputCount = reduceByIndex(x, into: y, initial: mode.initial) { result, value, _ in mode.combine(result, value) }
        for i in 0..<outputCount { y[i] = mode.finish(y[i], count: reduced) }
    }

    /// Σ x² over `count` values, in eight independent sums (ConvNeXt V2's ReduceL2 over each
    /// channel's plane: a single running sum waited on every addition, 8 times as slow).
    static func sumOfSquares(_ values: UnsafePointer<Float>, _ count: Int) -> Float {
        var sums = SIMD8<Float>(), i = 0
        let raw = UnsafeRawPointer(values)
        while i + 8 <= count {
            let v = raw.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            sums += v * v
            i += 8
        }
        var total = sums.sum()
        while i < count {
            total += values[i] * values[i]
            i += 1
        }
        return total
    }

    /// log Σ exp(x), as max + log Σ exp(x − max) so that large values do not overflow.
    private func logSumExp(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>) {
        let count = reduceByIndex(x, into: y, initial: -.infinity) { result, value, _ in Swift.max(result, value) }
        reduceByIndex(x, into: sums, initial: 0) { sum, value, target in sum + expf(value - y[target]) }
        for i in 0..<count { y[i] = y[i].isFinite ? y[i] + logf(sums[i]) : y[i] }
    }

    /// Every input value combined into its output position (`combine(result, value, position)`)
    /// by walking the input's indices, for any set of axes; returns the output's element count.
    @discardableResult
    private func reduceByIndex(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, initial: Float,
                               _ combine: (Float, Float, Int) -> Float) -> Int {
        let outputShape = inputShape.enumerated().map { axes.contains($0.offset) ? 1 : $0.element }
        let outputStrides = strides(of: outputShape)
        let outputCount = outputShape.reduce(1, *)
        y.update(repeating: initial, count: outputCount)
        var index = [Int](repeating: 0, count: inputShape.count)
        for i in 0..<inputShape.reduce(1, *) {
            var target = 0
            for axis in index.indices where !axes.contains(axis) { target += index[axis] * outputStrides[axis] }
            y[target] = combine(y[target], x[i], target)
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < inputShape[axis] { break }
                index[axis] = 0
            }
        }
        return outputCount
    }
}
