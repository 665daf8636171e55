/// MaxPool and AveragePool over NCHW (2-D windows, pads, strides, dilations, ceil_mode,
/// count_include_pad both ways).
struct PoolingKernel: Kernel {
    enum Mode: Equatable {
        case max
        case average(countIncludePad: Bool)
    }

    let planes: Int  // batch * channels
    let window: Window2D
    let mode: Mode

    func run(_ context: KernelContext) {
        let inputPlane = window.input.h * window.input.w
        let outputPlane = window.output.h * window.output.w
        parallelFor(planes, threads: context.threads) { p in
            let x = context.inputs[0] + p * inputPlane
            let y = context.outputs[0] + p * outputPlane
            for oh in 0..<window.output.h {
                let start = oh * window.stride.h - window.pads.top
                for ow in 0..<window.output.w {
                    let startW = ow * window.stride.w - window.pads.left
                    var best = -Float.infinity, sum: Float = 0, count = 0
                    for ki in 0..<window.kernel.h {
                        let ih = start + ki * window.dilation.h
                        guard ih >= 0 && ih < window.input.h else { continue }
                        for kj in 0..<window.kernel.w {
                            let iw = startW + kj * window.dilation.w
                            guard iw >= 0 && iw < window.input.w else { continue }
                            let value = x[ih * window.input.w + iw]
                            best = max(best, value)
                            sum += value
                            count += 1
                        }
                    }
                    switch mode {
                    case .max:
                        y[oh * window.output.w + ow] = best
                    case .average(let includePad):
                        // With padding counted, the window is clipped to the padded input only.
                        let divisor = includePad
                            ? (min(start + window.kernel.h, window.input.h + window.pads.bottom) - start)
                                * (min(startW + window.kernel.w, window.input.w + window.pads.right) - startW)
                            : count
                        y[oh * window.output.w + ow] = sum / Float(max(divisor, 1))
                    }
                }
            }
        }
    }
}

/// Reduction over a set of axes (ReduceMean, GlobalAveragePool, GlobalMaxPool).
struct ReduceKernel: Kernel {
    enum Mode { case mean, max }

    let inputShape: [Int]
    let axes: Set<Int>
    let mode: Mode

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        // Fast path: the reduced axes are the trailing ones (global pooling over H, W).
        let trailing = axes == Set((inputShape.count - axes.count)..<inputShape.count)
        if trailing {
            let inner = axes.map { inputShape[$0] }.reduce(1, *)
            let outer = inputShape.reduce(1, *) / max(inner, 1)
            parallelFor(outer, threads: context.threads) { o in
                let values = UnsafeBufferPointer(start: x + o * inner, count: inner)
                y[o] = mode == .mean ? values.reduce(0, +) / Float(inner) : values.reduce(-.infinity, max)
            }
            return
        }
        let outputShape = inputShape.enumerated().map { axes.contains($0.offset) ? 1 : $0.element }
        let outputStrides = strides(of: outputShape)
        let outputCount = outputShape.reduce(1, *)
        let reduced = axes.map { inputShape[$0] }.reduce(1, *)
        for i in 0..<outputCount { y[i] = mode == .mean ? 0 : -.infinity }
        var index = [Int](repeating: 0, count: inputShape.count)
        for i in 0..<inputShape.reduce(1, *) {
            var target = 0
            for axis in index.indices where !axes.contains(axis) { target += index[axis] * outputStrides[axis] }
            y[target] = mode == .mean ? y[target] + x[i] : max(y[target], x[i])
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < inputShape[axis] { break }
                index[axis] = 0
            }
        }
        if mode == .mean {
            for i in 0..<outputCount { y[i] /= Float(reduced) }
        }
    }
}
