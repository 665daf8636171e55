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
    /// For averages: the divisor of output (oh, ow) is rows[oh] * columns[ow].
    private let divisors: (rows: [Float], columns: [Float])?

    /// Fixes the geometry; the column ranges and divisors are computed here, once.
    init(planes: Int, window: Window2D, mode: Mode) {
        self.planes = planes
        self.window = window
        self.mode = mode
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

    /// Separable and flat: the plane (copied into a padded plane, `identity` around it, when it
    /// has padding) is reduced down the window's height at every position, then along its width:
    /// kh + kw operations per position, in loops over several rows at once that vectorise (per-row
    /// loops over planes of 8 to 35 columns did not). Rows are taken a few at a time so the passes
    /// stay in L1. Outputs are read off at the strides; a stride above 1 wastes positions, not speed.
    func run(_ context: KernelContext) {
        switch mode {
        case .max: pool(MaxReduction.self, context)
        case .average: pool(SumReduction.self, context)
        }
    }

    /// Floats of positions one group of output rows covers, at most (unless one row is longer).
    static let groupFloats = 1024

    private func pool<R: PoolReduction>(_: R.Type, _ context: KernelContext) {
        if window.stride == (1, 1) && window.dilation == (1, 1) && window.output == window.input {
            return samePool(R.self, context)
        }
        let (kh, kw, sh, sw, dh, dw) = (window.kernel.h, window.kernel.w, window.stride.h, window.stride.w,
                                        window.dilation.h, window.dilation.w)
        let (height, width) = window.input, (outHeight, outWidth) = window.output
        let inputPlane = height * width, outputPlane = outHeight * outWidth
        // Long enough for every window, ceil_mode's overhanging ones too.
        let paddedWidth = max(window.pads.left + width + window.pads.right, (outWidth - 1) * sw + (kw - 1) * dw + 1)
        let paddedHeight = max(window.pads.top + height + window.pads.bottom, (outHeight - 1) * sh + (kh - 1) * dh + 1)
        let needsPadding = paddedWidth != width || paddedHeight != height
        let loops = context.loops, combine = R.loop(loops)
        let rowsPerGroup = max(1, (Self.groupFloats / paddedWidth - 1) / sh + 1)
        let groupPositions = ((rowsPerGroup - 1) * sh + 1) * paddedWidth
        context.team.parallelFor(planes) { p in
            let x = context.inputs[0] + p * inputPlane
            let y = context.outputs[0] + p * outputPlane
            let paddedCount = needsPadding ? paddedHeight * paddedWidth : 0
            withUnsafeTemporaryAllocation(of: Float.self, capacity: paddedCount + 2 * groupPositions) { buffer in
                let down = buffer.baseAddress!, across = down + groupPositions
                var plane = x
                if needsPadding {
                    let padded = across + groupPositions
                    padded.initialize(repeating: R.identity, count: paddedCount)
                    for h in 0..<height {
                        (padded + (h + window.pads.top) * paddedWidth + window.pads.left).update(from: x + h * width, count: width)
                    }
                    plane = UnsafePointer(padded)
                }
                for firstRow in stride(from: 0, to: outHeight, by: rowsPerGroup) {
                    let rows = min(rowsPerGroup, outHeight - firstRow)
                    let positions = ((rows - 1) * sh + 1) * paddedWidth, top = plane + firstRow * sh * paddedWidth
                    down.update(from: top, count: positions)
                    for ki in 1..<max(kh, 1) { combine(down, top + ki * dh * paddedWidth, positions) }
                    let reach = positions - (kw - 1) * dw
                    across.update(from: down, count: reach)
                    for kj in 1..<max(kw, 1) { combine(across, down + kj * dw, reach) }
                    for r in 0..<rows {
                        let oh = firstRow + r, row = y + oh * outWidth, source = across + r * sh * paddedWidth
                        if sw == 1 {
                            row.update(from: source, count: outWidth)
                        } else {
                            loops.gather(row, source, outWidth, sw)
                        }
                        average(row, outputRow: oh)
                    }
                }
            }
        }
    }
}

extension PoolingKernel {
    /// For averages, divides output row `oh` (its sums) by each window's count; nothing for max.
    fileprivate func average(_ row: UnsafeMutablePointer<Float>, outputRow oh: Int) {
        guard let divisors else { return }
        let rowFactor = divisors.rows[oh]
        divisors.columns.withUnsafeBufferPointer { columns in
            for ow in columns.indices { row[ow] /= max(rowFactor * columns[ow], 1) }
        }
    }

    /// Stride-1 windows whose output is the input's size (InceptionV3's and GoogLeNet's 3x3,
    /// pads 1): no padded copy; each pass is one loop over the whole plane, every tap a shift of
    /// it, rows whose shifted row falls outside skipped; across the width a shift also wraps into
    /// the neighbouring row, so the columns within the padding of each edge are recomputed after.
    fileprivate func samePool<R: PoolReduction>(_: R.Type, _ context: KernelContext) {
        let (kh, kw) = window.kernel, (height, width) = window.input
        let (top, left) = (window.pads.top, window.pads.left), plane = height * width
        let combine = R.loop(context.loops)
        context.team.parallelFor(planes) { p in
            let x = context.inputs[0] + p * plane, y = context.outputs[0] + p * plane
            withUnsafeTemporaryAllocation(of: Float.self, capacity: plane) { buffer in
                let down = buffer.baseAddress!
                down.update(from: x, count: plane)
                // A window taller or wider than the plane shifts some taps right off it: those add nothing.
                for ki in 0..<kh where ki != top {
                    let shift = ki - top, first = max(0, -shift), end = min(height, height - shift)
                    guard first < end else { continue }
                    combine(down + first * width, x + (first + shift) * width, (end - first) * width)
                }
                y.update(from: down, count: plane)
                for kj in 0..<kw where kj != left {
                    let shift = kj - left, first = max(0, -shift), count = plane - max(0, shift) - first
                    guard count > 0 else { continue }
                    combine(y + first, down + first + shift, count)
                }
                let rightEdge = min(max(width - (kw - 1 - left), left), width)
                for h in 0..<height {
                    let row = y + h * width, reduced = down + h * width
                    @inline(__always) func recompute(_ c: Int) {
                        var value = R.identity
                        for kj in max(0, left - c)..<min(kw, width + left - c) { value = R.combine(value, reduced[c + kj - left]) }
                        row[c] = value
                    }
                    for c in 0..<min(left, width) { recompute(c) }
                    for c in rightEdge..<width { recompute(c) }
                }
                for h in 0..<height { average(y + h * width, outputRow: h) }
            }
        }
    }
}

/// How a pooling window's values combine, and the value padding contributes.
private protocol PoolReduction {
    static var identity: Float { get }
    static func combine(_ a: Float, _ b: Float) -> Float
    /// target[i] = combine(target[i], source[i]) over arrays, in the chosen build.
    static func loop(_ loops: KernelLoops) -> KernelLoops.Binary
}

/// MaxPool: padding is -infinity, which never wins.
private enum MaxReduction: PoolReduction {
    static var identity: Float { -.infinity }
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { max(a, b) }
    static func loop(_ loops: KernelLoops) -> KernelLoops.Binary { loops.maximum }
}

/// AveragePool's sum: padding adds zero (the divisors say whether it counts).
private enum SumReduction: PoolReduction {
    static var identity: Float { 0 }
    @inline(__always) static func combine(_ a: Float, _ b: Float) -> Float { a + b }
    static func loop(_ loops: KernelLoops) -> KernelLoops.Binary { loops.add }
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
