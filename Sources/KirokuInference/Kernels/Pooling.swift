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
    /// For each kernel column, the output columns that read inside the row (see columnRanges).
    private let columns: [(first: Int, last: Int, start: Int)]
    /// For averages: the divisor of output (oh, ow) is rows[oh] * columns[ow].
    private let divisors: (rows: [Float], columns: [Float])?

    /// Fixes the geometry; the column ranges and divisors are computed here, once.
    init(planes: Int, window: Window2D, mode: Mode) {
        self.planes = planes
        self.window = window
        self.mode = mode
        columns = Self.columnRanges(window)
        switch mode {
        case .max:
            divisors = nil
        case .average(let includePad):
            func factors(count: Int, kernel: Int, stride: Int, dilation: Int, padBegin: Int, padEnd: Int, extent: Int) -> [Float] {
                (0..<count).map { o in
                    let start = o * stride - padBegin
                    if includePad { return Float(min(start + kernel, extent + padEnd) - start) }
                    return Float((0..<kernel).filter { start + $0 * dilation >= 0 && start + $0 * dilation < extent }.count)
                }
            }
            divisors = (factors(count: window.output.h, kernel: window.kernel.h, stride: window.stride.h, dilation: window.dilation.h,
                                padBegin: window.pads.top, padEnd: window.pads.bottom, extent: window.input.h),
                        factors(count: window.output.w, kernel: window.kernel.w, stride: window.stride.w, dilation: window.dilation.w,
                                padBegin: window.pads.left, padEnd: window.pads.right, extent: window.input.w))
        }
    }

    func run(_ context: KernelContext) {
        let (kh, sh, sw, dh) = (window.kernel.h, window.stride.h, window.stride.w, window.dilation.h)
        let (height, width) = window.input, (outHeight, outWidth) = window.output
        let inputPlane = height * width, outputPlane = outHeight * outWidth
        context.team.parallelFor(planes) { p in
            let x = context.inputs[0] + p * inputPlane
            let y = context.outputs[0] + p * outputPlane
            for oh in 0..<outHeight {
                let row = y + oh * outWidth
                row.update(repeating: divisors == nil ? -.infinity : 0, count: outWidth)
                for ki in 0..<kh {
                    let ih = oh * sh - window.pads.top + ki * dh
                    guard ih >= 0 && ih < height else { continue }
                    let line = x + ih * width
                    for (first, last, start) in columns where first <= last {
                        let source = line + start, target = row + first, count = last - first + 1
                        // Stride 1 gets loops of its own: with a constant stride they vectorise.
                        switch (divisors == nil, sw == 1) {
                        case (true, true): for i in 0..<count { target[i] = max(target[i], source[i]) }
                        case (true, false): for i in 0..<count { target[i] = max(target[i], source[i * sw]) }
                        case (false, true): for i in 0..<count { target[i] += source[i] }
                        case (false, false): for i in 0..<count { target[i] += source[i * sw] }
                        }
                    }
                }
                if let divisors {
                    let rowFactor = divisors.rows[oh]
                    for ow in 0..<outWidth { row[ow] /= max(rowFactor * divisors.columns[ow], 1) }
                }
            }
        }
    }

    /// For each kernel column kj: the output columns [first, last] whose input column lies inside
    /// the row, and the input column that `first` reads. Inside the range no bounds check is needed.
    static func columnRanges(_ window: Window2D) -> [(first: Int, last: Int, start: Int)] {
        (0..<window.kernel.w).map { kj in
            let shift = kj * window.dilation.w - window.pads.left
            let first = shift >= 0 ? 0 : (-shift + window.stride.w - 1) / window.stride.w
            let last = min(window.output.w - 1, window.input.w - 1 - shift >= 0 ? (window.input.w - 1 - shift) / window.stride.w : -1)
            return (first, last, first * window.stride.w + shift)
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
            context.team.parallelFor(outer) { o in
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
