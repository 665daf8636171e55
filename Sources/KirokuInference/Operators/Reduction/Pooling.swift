/// MaxPool and AveragePool over NCHW (2-D windows, pads, strides, dilations, ceil_mode,
/// count_include_pad both ways), a plane per loop index through KirokuKernels' WindowPooling.
struct PoolingKernel: Kernel {
    enum Mode: Equatable {
        case max
        case average(countIncludePad: Bool)
    }

    let planes: Int  // batch * channels
    let channels: Int
    let window: Window2D
    let mode: Mode
    /// Added to each channel's averages, then `activation`: a pointwise convolution's, where it
    /// now runs before the pool (GraphPasses.poolAfterPointwise); each plane while it is in cache.
    let bias: [Float]?
    let activation: Activation?
    /// For each output row, its window's input rows inside the plane: the first and how many (every
    /// dilation-th row from it).
    private let rows: [(first: Int, count: Int)]
    /// The same for each output column (channel blocks read them directly, without a combined row).
    private let columns: [(first: Int, count: Int)]
    /// For averages: output (oh, ow) is its window's sum times rows[oh] * columns[ow], 1 / the
    /// window's count along each axis (1 where it is 0: the sum is 0 there).
    private let reciprocals: (rows: [Float], columns: [Float])?
    /// Floats of the row buffer: the combined row with padding either side, every column a
    /// window reads (ceil_mode's overhanging ones too), and slack for whole vectors at stride 2.
    private let bufferWidth: Int
    /// Stride 1 with the output the input's size, rows at least 8 wide: samePlane.
    private let same: Bool
    /// For averages over the same size: 1 / each position's count.
    private let positionReciprocals: [Float]
    /// Whether input and output are channel-blocked (NCHW8c, see ChannelBlocks): see overChannelBlocks.
    private(set) var readsChannelBlocks = false

    /// Fixes the geometry; the row ranges and reciprocal counts are computed here, once.
    init(batch: Int, channels: Int, window: Window2D, mode: Mode, bias: [Float]?, activation: Activation?) {
        planes = batch * channels
        self.channels = channels
        self.window = window
        self.mode = mode
        self.bias = bias
        self.activation = activation
        rows = window.tapsInside(rows: true).enumerated().map { oh, taps in
            (oh * window.stride.h - window.pads.top + taps.first * window.dilation.h, taps.count)
        }
        columns = window.tapsInside(rows: false).enumerated().map { ow, taps in
            (ow * window.stride.w - window.pads.left + taps.first * window.dilation.w, taps.count)
        }
        let reach = (window.output.w - 1) * window.stride.w + (window.kernel.w - 1) * window.dilation.w + 1
        bufferWidth = max(window.pads.left + window.input.w + window.pads.right, reach) + Self.slack
        same = window.stride == (1, 1) && window.dilation == (1, 1) && window.output == window.input && window.input.w >= 8
        let counts: (rows: [Float], columns: [Float])?
        switch mode {
        case .max:
            counts = nil
        case .average(let includePad):
            func factors(count: Int, kernel: Int, stride: Int, dilation: Int, padBegin: Int, padEnd: Int, extent: Int) -> [Float] {
                (0..<count).map { o in
                    let start = o * stride - padBegin
                    if includePad { return Float(min(start + kernel, extent + padEnd) - start) }
                    return Float((0..<kernel).filter { start + $0 * dilation >= 0 && start + $0 * dilation < extent }.count)
                }
            }
            counts = (factors(count: window.output.h, kernel: window.kernel.h, stride: window.stride.h, dilation: window.dilation.h,
                              padBegin: window.pads.top, padEnd: window.pads.bottom, extent: window.input.h),
                      factors(count: window.output.w, kernel: window.kernel.w, stride: window.stride.w, dilation: window.dilation.w,
                              padBegin: window.pads.left, padEnd: window.pads.right, extent: window.input.w))
        }
        reciprocals = counts.map { ($0.rows.map { 1 / max($0, 1) }, $0.columns.map { 1 / max($0, 1) }) }
        positionReciprocals = same ? counts.map { d in d.rows.flatMap { r in d.columns.map { 1 / max(r * $0, 1) } } } ?? [] : []
    }

    /// Floats past the last column a window reads: a stride-2 vector loads 16 floats for 8.
    static let slack = 16

    /// Each thread's buffer in scratch (the row, or for the same size the plane's combined rows,
    /// each kernel.w - 1 wider), rounded to cache lines.
    private var bufferFloats: Int { ((same ? window.input.h * (window.input.w + window.kernel.w - 1) : bufferWidth) + 15) / 16 * 16 }

    func scratchCount(threads: Int) -> Int { threads * bufferFloats }

    /// An output row at a time: the window's rows combined in one vector pass, then along the row
    /// (through vectors at strides 1 and 2), each plane's rows in L1 (a pass per tap over whole
    /// planes, as before, cost InceptionV3 about three times ONNX Runtime's pooling time).
    func run(_ context: KernelContext) {
        if readsChannelBlocks { return blocks(context) }
        if same { return samePlanes(context) }
        let inputPlane = window.input.h * window.input.w, outputPlane = window.output.h * window.output.w
        let columnWindow = (left: window.pads.left, taps: window.kernel.w, stride: window.stride.w, dilation: window.dilation.w,
                            outputs: window.output.w)
        let pool = context.loops.pool, maximum = mode == .max
        let (width, rowStep, bufferWidth) = (window.input.w, window.dilation.h, bufferWidth)
        let reciprocals = reciprocals ?? ([], [])
        rows.withUnsafeBufferPointer { rows in
            reciprocals.rows.withUnsafeBufferPointer { rowFactors in
                reciprocals.columns.withUnsafeBufferPointer { columnFactors in
                    let factors = maximum ? nil : (rows: rowFactors.baseAddress!, columns: columnFactors.baseAddress!)
                    context.team.parallelFor(planes) { p, worker in
                        pool(context.inputs[0] + p * inputPlane, width, rows, rowStep, columnWindow, maximum, factors,
                             context.scratch + worker * bufferFloats, bufferWidth, context.outputs[0] + p * outputPlane)
                        finish(context.outputs[0] + p * outputPlane, count: outputPlane, channel: p % channels, loops: context.loops)
                    }
                }
            }
        }
    }

    /// Same-size stride-1 pooling, a plane per loop index through WindowPooling.samePlane.
    private func samePlanes(_ context: KernelContext) {
        let (height, width) = window.input, plane = height * width, pool = context.loops.samePool
        let kernel = window.kernel, pads = (top: window.pads.top, left: window.pads.left), maximum = mode == .max
        positionReciprocals.withUnsafeBufferPointer { reciprocals in
            context.team.parallelFor(planes) { p, worker in
                pool(context.inputs[0] + p * plane, height, width, kernel, pads, maximum, maximum ? nil : reciprocals.baseAddress,
                     context.scratch + worker * bufferFloats, context.outputs[0] + p * plane)
                finish(context.outputs[0] + p * plane, count: plane, channel: p % channels, loops: context.loops)
            }
        }
    }

    /// The same pooling over channel-blocked input, into channel-blocked output, where the
    /// channels are whole blocks: a chain of channel-blocked convolutions (InceptionV3's) then
    /// runs through its poolings with no move either side.
    var overChannelBlocks: PoolingKernel? {
        guard channels % 8 == 0 else { return nil }
        var blocked = self
        blocked.readsChannelBlocks = true
        return blocked
    }

    /// A block of 8 channels per loop index through WindowPooling.block, then the activation over
    /// the block.
    private func blocks(_ context: KernelContext) {
        let (inputBlock, outputBlock) = (window.input.h * window.input.w * 8, window.output.h * window.output.w * 8)
        let (width, rowStep, columnStep) = (window.input.w, window.dilation.h, window.dilation.w)
        let pool = context.loops.blockPool, maximum = mode == .max, reciprocals = reciprocals ?? ([], [])
        rows.withUnsafeBufferPointer { rows in
            columns.withUnsafeBufferPointer { columns in
                reciprocals.rows.withUnsafeBufferPointer { rowFactors in
                    reciprocals.columns.withUnsafeBufferPointer { columnFactors in
                        (bias ?? []).withUnsafeBufferPointer { bias in
                            let factors = maximum ? nil : (rows: rowFactors.baseAddress!, columns: columnFactors.baseAddress!)
                            context.team.parallelFor(planes / 8) { b in
                                let y = context.outputs[0] + b * outputBlock
                                pool(context.inputs[0] + b * inputBlock, width, rows, rowStep, columns, columnStep, maximum, factors,
                                     bias.isEmpty ? nil : bias.baseAddress! + b * 8 % channels, y)
                                activation?.apply(UnsafeMutableBufferPointer(start: y, count: outputBlock), loops: context.loops)
                            }
                        }
                    }
                }
            }
        }
    }

    var variant: String? {
        let parts = [bias != nil || activation != nil ? "then the convolution's bias and activation" : nil,
                     readsChannelBlocks ? "over channel blocks" : nil].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    /// One output plane's bias and activation, if any.
    private func finish(_ plane: UnsafeMutablePointer<Float>, count: Int, channel: Int, loops: KernelLoops) {
        if let bias {
            let value = bias[channel]
            for i in 0..<count { plane[i] += value }
        }
        activation?.apply(UnsafeMutableBufferPointer(start: plane, count: count), loops: loops)
    }
}

/// GlobalAveragePool or GlobalMaxPool over channel-blocked input (NCHW8c, see ChannelBlocks): a
/// vector of 8 channels per position, reduced along the plane; the output (one value per channel)
/// is laid out the same either way, so a chain of channel-blocked convolutions ends here with no move.
struct BlockedGlobalPoolKernel: Kernel {
    let batch: Int, channels: Int, plane: Int
    let mode: ReduceKernel.Mode

    var variant: String? { "over channel blocks" }

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0], blocks = channels / 8
        context.team.parallelFor(batch * blocks) { index in
            let source = UnsafeRawPointer(x + index * plane * 8)
            var result = SIMD8<Float>(repeating: mode == .mean ? 0 : -.infinity)
            for p in 0..<plane {
                let vector = source.loadUnaligned(fromByteOffset: p * 32, as: SIMD8<Float>.self)
                result = mode == .mean ? result + vector : result.replacing(with: vector, where: vector .> result)
            }
            if mode == .mean { result /= SIMD8(repeating: Float(plane)) }
            UnsafeMutableRawPointer(y + index * 8).storeBytes(of: result, as: SIMD8<Float>.self)
        }
    }
}
