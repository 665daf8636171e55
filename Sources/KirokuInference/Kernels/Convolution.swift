import COpenBLAS

/// The geometry of a 2-D convolution or pooling window over NCHW data.
struct Window2D: Equatable {
    var kernel: (h: Int, w: Int)
    var stride: (h: Int, w: Int)
    var dilation: (h: Int, w: Int)
    /// Padding: top, left, bottom, right.
    var pads: (top: Int, left: Int, bottom: Int, right: Int)
    var input: (h: Int, w: Int)
    var output: (h: Int, w: Int)

    static func == (a: Window2D, b: Window2D) -> Bool {
        a.kernel == b.kernel && a.stride == b.stride && a.dilation == b.dilation && a.pads == b.pads
            && a.input == b.input && a.output == b.output
    }

    /// Resolves explicit pads or auto_pad, and the output size (ceil_mode for pooling).
    init(node: Node, kernel: (Int, Int), input: (Int, Int), ceilMode: Bool = false) throws(InferenceError) {
        let strides = node.ints("strides") ?? [1, 1]
        let dilations = node.ints("dilations") ?? [1, 1]
        guard strides.count == 2, dilations.count == 2, strides.allSatisfy({ $0 > 0 }), dilations.allSatisfy({ $0 > 0 }) else {
            throw InferenceError(.unsupported, "\(node.label): only 2-D windows with positive strides and dilations are supported")
        }
        guard kernel.0 > 0, kernel.1 > 0 else {
            throw InferenceError(.invalidShape, "\(node.label): window \(kernel) must be at least 1x1")
        }
        self.kernel = kernel
        self.stride = (strides[0], strides[1])
        self.dilation = (dilations[0], dilations[1])
        self.input = input
        let extent = ((kernel.0 - 1) * dilations[0] + 1, (kernel.1 - 1) * dilations[1] + 1)
        switch node.string("auto_pad", default: "NOTSET") {
        case "SAME_UPPER", "SAME_LOWER":
            let upper = node.string("auto_pad", default: "") == "SAME_UPPER"
            let out = ((input.0 + strides[0] - 1) / strides[0], (input.1 + strides[1] - 1) / strides[1])
            let total = (max(0, (out.0 - 1) * strides[0] + extent.0 - input.0), max(0, (out.1 - 1) * strides[1] + extent.1 - input.1))
            let begin = upper ? (total.0 / 2, total.1 / 2) : (total.0 - total.0 / 2, total.1 - total.1 / 2)
            pads = (begin.0, begin.1, total.0 - begin.0, total.1 - begin.1)
            output = out
            return
        case "VALID":
            pads = (0, 0, 0, 0)
        case "NOTSET":
            let explicit = node.ints("pads") ?? [0, 0, 0, 0]
            guard explicit.count == 4, explicit.allSatisfy({ $0 >= 0 }) else {
                throw InferenceError(.unsupported, "\(node.label): pads \(explicit) (2-D windows take four non-negative pads)")
            }
            pads = (explicit[0], explicit[1], explicit[2], explicit[3])
        case let other:
            throw InferenceError(.unsupported, "\(node.label): auto_pad \(other)")
        }
        func size(_ input: Int, _ padded: Int, _ extent: Int, _ stride: Int, _ padBegin: Int) -> Int {
            let span = padded - extent
            guard ceilMode else { return span / stride + 1 }
            var out = (span + stride - 1) / stride + 1
            if (out - 1) * stride >= input + padBegin { out -= 1 }  // the last window must start inside
            return out
        }
        output = (size(input.0, input.0 + pads.top + pads.bottom, extent.0, stride.h, pads.top),
                  size(input.1, input.1 + pads.left + pads.right, extent.1, stride.w, pads.left))
        guard output.h > 0, output.w > 0 else {
            throw InferenceError(.invalidShape, "\(node.label): a \(kernel) window does not fit a \(input) input")
        }
    }
}

extension Window2D {
    /// For each output row (`rows`) or column, the window's taps along that axis whose input lies
    /// inside the image: the first tap and how many (the others read only padding).
    func tapsInside(rows: Bool) -> [(first: Int, count: Int)] {
        let (outputs, taps, step, dilation, padBegin, extent) = rows
            ? (output.h, kernel.h, stride.h, self.dilation.h, pads.top, input.h)
            : (output.w, kernel.w, stride.w, self.dilation.w, pads.left, input.w)
        return (0..<outputs).map { o in
            let inside = (0..<taps).filter { (0..<extent).contains(o * step - padBegin + $0 * dilation) }
            return (inside.first ?? 0, inside.count)
        }
    }

    /// For each kernel column kj: the output columns [first, last] whose input column lies inside
    /// the row, and the input column that `first` reads. Inside the range no bounds check is needed.
    var columnRanges: [(first: Int, last: Int, start: Int)] {
        (0..<kernel.w).map { kj in
            let shift = kj * dilation.w - pads.left
            let first = shift >= 0 ? 0 : (-shift + stride.w - 1) / stride.w
            let last = min(output.w - 1, input.w - 1 - shift >= 0 ? (input.w - 1 - shift) / stride.w : -1)
            return (first, last, first * stride.w + shift)
        }
    }
}

/// Conv over NCHW: 1x1 stride-1 unpadded convolutions are sgemm on the activations as they are;
/// other grouped convolutions go through im2col + sgemm; depthwise ones run a direct SIMD loop.
/// In the AVX2 build, the shapes its direct kernels suit run there instead (`direct`:
/// DirectConvolutionPlan, TransposedPointwisePlan, DepthwiseLanesPlan), with no unrolled copy and
/// no packing per call.
/// Bias and a fused activation are applied as each part of the output is produced.
struct ConvolutionKernel: Kernel {
    let batch: Int
    let inChannels: Int
    let outChannels: Int
    let groups: Int
    let window: Window2D
    /// Weights [outChannels, inChannels / groups * kh * kw]: ONNX's layout is already sgemm's
    /// (unused when `direct` runs the convolution: it keeps its own packing).
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>?
    /// The direct convolution that runs it instead of im2col and sgemm, when the build has one.
    let direct: (any DirectMethod)?
    let activation: Activation?
    /// Per kernel column, the output columns reading inside the row (im2col).
    private let columnRanges: [(first: Int, last: Int, start: Int)]
    /// Where the depthwise loop reads and writes (depthwise convolutions only).
    private let depthwiseLayout: DepthwiseLayout?
    /// Output rows per band when the unrolled input is too big for cache (see `banded`).
    private let bandRows: Int?
    /// Whether a second input (the output's shape) is added to the sums: a fused residual Add.
    var residual = false

    /// A residual Add can be fused: the sums start from memory (not depthwise's registers) and
    /// no activation runs before the Add would.
    var canAddResidual: Bool { !isDepthwise && activation == nil && !residual && direct?.addsResidual ?? true }

    /// Fixes the geometry; what the chosen loop needs of it is computed here, once.
    init(batch: Int, inChannels: Int, outChannels: Int, groups: Int, window: Window2D,
         weights: UnsafePointer<Float>, bias: UnsafePointer<Float>?, activation: Activation?, direct: (any DirectMethod)? = nil) {
        self.batch = batch
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.groups = groups
        self.window = window
        self.weights = weights
        self.bias = bias
        self.activation = activation
        self.direct = direct
        columnRanges = window.columnRanges
        depthwiseLayout = groups == inChannels && groups == outChannels ? DepthwiseLayout(window) : nil
        let unrolledBytes = inChannels * window.kernel.h * window.kernel.w * window.output.h * window.output.w * 4
        let pointwise = window.kernel == (1, 1) && window.stride == (1, 1) && window.pads == (0, 0, 0, 0)
        bandRows = groups == 1 && !pointwise && unrolledBytes > Self.bandAbove
            ? max(1, Self.bandBytes / (inChannels * window.kernel.h * window.kernel.w * 4) / window.output.w) : nil
    }

    /// Whether it reads, and writes, channel-blocked data (NCHW8c): its direct method's choice.
    var readsChannelBlocks: Bool { direct?.readsChannelBlocks ?? false }
    var writesChannelBlocks: Bool { direct?.writesChannelBlocks ?? false }
    var isDepthwise: Bool { groups == inChannels && groups == outChannels }
    var isPointwise: Bool {
        window.kernel == (1, 1) && window.stride == (1, 1) && window.pads == (0, 0, 0, 0)
    }
    var columnRows: Int { inChannels / groups * window.kernel.h * window.kernel.w }
    var outputPlane: Int { window.output.h * window.output.w }
    func scratchCount(threads: Int) -> Int {
        if let direct { return direct.scratchCount(threads: threads) }
        if let bandRows { return threads * columnRows * bandRows * window.output.w }
        if let depthwiseLayout { return threads * depthwiseLayout.plane.floats }
        return isPointwise ? 0 : columnRows * outputPlane
    }
    var multiplyAdds: Int { batch * outChannels * columnRows * outputPlane }
    var variant: String? {
        let size = "\(window.kernel.h)x\(window.kernel.w)/\(window.stride.h)"
        let kind = direct.map { "\($0.label) \(size)" } ?? (isDepthwise ? "depthwise \(size)" : isPointwise ? "pointwise sgemm" : "im2col sgemm \(size)\(bandRows == nil ? "" : " in bands")")
        return residual ? kind + " + residual" : kind
    }

    func run(_ context: KernelContext) {
        let input = context.inputs[0], output = context.outputs[0]
        let inputPlane = window.input.h * window.input.w
        let groupIn = inChannels / groups, groupOut = outChannels / groups
        for n in 0..<batch {
            let x = input + n * inChannels * inputPlane
            let y = output + n * outChannels * outputPlane
            let added = residual ? context.inputs[1] + n * outChannels * outputPlane : nil
            if let direct {
                direct.run(x, y, added: added, activation: activation, context: context)
                continue
            }
            if isDepthwise {
                depthwise(x, y, context: context)
                continue
            }
            if let bandRows {
                banded(x, y, added: added, bandRows: bandRows, context: context)
                continue
            }
            for g in 0..<groups {
                let source: UnsafePointer<Float>
                if isPointwise {
                    source = x + g * groupIn * inputPlane
                } else {
                    let group = x + g * groupIn * inputPlane
                    context.team.parallelFor(groupIn) { c in
                        im2col(group + c * inputPlane, channel: c, rows: 0..<window.output.h, into: context.scratch, loops: context.loops)
                    }
                    source = UnsafePointer(context.scratch)
                }
                // OpenBLAS runs single-threaded; the output is cut into tiles, claimed by our
                // threads: column ranges, or, when each thread would get only a few columns (the
                // small planes late in a network), ranges of output channels.
                let (rowTile, columnTile) = tiles(threads: context.threads)
                let columnTiles = (outputPlane + columnTile - 1) / columnTile
                context.team.parallelFor((groupOut + rowTile - 1) / rowTile * columnTiles) { index in
                    let firstRow = index / columnTiles * rowTile, start = index % columnTiles * columnTile
                    product(group: g, channels: firstRow..<min(firstRow + rowTile, groupOut), columns: start, count: min(columnTile, outputPlane - start),
                            source: source + start, ldb: outputPlane, output: y, added: added, loops: context.loops)
                }
            }
        }
    }

    /// An im2col convolution whose unrolled input would not fit in cache, in bands of `bandRows`
    /// output rows: each band's columns are unrolled into the scratch slot of the thread working it
    /// (about one L2 cache) and multiplied at once, while they are still there.
    private func banded(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, bandRows: Int,
                        context: KernelContext) {
        let (outHeight, outWidth) = window.output, inputPlane = window.input.h * window.input.w
        context.team.parallelFor((outHeight + bandRows - 1) / bandRows) { band, worker in
            let buffer = context.scratch + worker * columnRows * bandRows * outWidth
            let rows = (band * bandRows)..<min(outHeight, (band + 1) * bandRows), count = rows.count * outWidth
            for c in 0..<inChannels { im2col(x + c * inputPlane, channel: c, rows: rows, into: buffer, loops: context.loops) }
            product(group: 0, channels: 0..<outChannels, columns: rows.lowerBound * outWidth, count: count,
                    source: UnsafePointer(buffer), ldb: count, output: y, added: added, loops: context.loops)
        }
    }

    /// One tile of the output, output channels `channels` of group `group` by `count` columns from
    /// `columns` on: set to the bias (plus `added`, a fused residual laid out as the output), the
    /// product with `source` (its first column, row stride `ldb`) added (beta 1: OpenBLAS would
    /// otherwise spend a pass zeroing it), the activation run on it while the tile (at most about
    /// `tileBytes`) is still in cache.
    private func product(group g: Int, channels: Range<Int>, columns start: Int, count: Int, source: UnsafePointer<Float>, ldb: Int,
                         output y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, loops: KernelLoops) {
        let groupOut = outChannels / groups
        let offset = (g * groupOut + channels.lowerBound) * outputPlane + start, target = y + offset
        for (row, channel) in channels.enumerated() {
            let line = target + row * outputPlane, value = bias?[g * groupOut + channel] ?? 0
            guard let added else {
                line.update(repeating: value, count: count)
                continue
            }
            let other = added + offset + row * outputPlane
            for i in 0..<count { line[i] = value + other[i] }
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(channels.count), Int32(count), Int32(columnRows),
                    1, weights + (g * groupOut + channels.lowerBound) * columnRows, Int32(columnRows),
                    source, Int32(ldb), 1, target, Int32(outputPlane))
        guard let activation else { return }
        for row in 0..<channels.count {
            activation.apply(UnsafeMutableBufferPointer(start: target + row * outputPlane, count: count), loops: loops)
        }
    }

    /// Output channels and columns per sgemm call: column ranges of an output tile of at
    /// most `tileBytes`, at least one tile per thread, a multiple of 8; when that leaves a thread
    /// fewer than `minimumColumns`, all columns and the channels split between the threads.
    private func tiles(threads: Int) -> (rows: Int, columns: Int) {
        let groupOut = outChannels / groups
        let perThread = (outputPlane + threads - 1) / threads
        if perThread < Self.minimumColumns && threads > 1 {
            return ((groupOut + threads - 1) / threads, outputPlane)
        }
        let byCache = Self.tileBytes / 4 / max(groupOut, 1)
        return (groupOut, max(8, (min(byCache, perThread) + 7) / 8 * 8))
    }

    /// Below this many columns per thread, output channels are split instead.
    static let minimumColumns = 128

    /// The output tile an sgemm call writes: about one core's L2 cache.
    static let tileBytes = 512 * 1024

    /// Unrolled inputs bigger than this are unrolled and multiplied in bands.
    static let bandAbove = 4 * 1024 * 1024

    /// A band's unrolled input: it stays in the L2 and L3 caches between unrolling and sgemm
    /// (measured on InceptionV3's 147x147 and 71x71 layers: 512 KB to 4 MB all gain, 2 MB most).
    static let bandBytes = 2 * 1024 * 1024

    /// Unrolls channel `channel` (its plane at `plane`) into rows (channel, ki, kj) by columns
    /// (the output positions of output rows `rows`), zeros for padding. Per kernel column, the
    /// output columns reading inside the image are one run (`Window2D.columnRanges`): copied at
    /// once for stride 1, zeros written around it. Same-size convolutions copy shifted planes.
    private func im2col(_ plane: UnsafePointer<Float>, channel c: Int, rows: Range<Int>, into column: UnsafeMutablePointer<Float>,
                        loops: KernelLoops) {
        let (kh, kw) = window.kernel
        let (height, width) = window.input, outWidth = window.output.w
        let sw = window.stride.w, rowLength = rows.count * outWidth
        for ki in 0..<kh {
            for kj in 0..<kw {
                let row = column + ((c * kh + ki) * kw + kj) * rowLength
                if isSameSize {
                    shiftedPlane(plane, by: (ki * window.dilation.h - window.pads.top, kj * window.dilation.w - window.pads.left),
                                 rows: rows, into: row)
                    continue
                }
                let (first, last, start) = columnRanges[kj]
                let inside = max(last - first + 1, 0)
                for oh in rows {
                    let ih = oh * window.stride.h - window.pads.top + ki * window.dilation.h
                    let out = row + (oh - rows.lowerBound) * outWidth
                    guard ih >= 0 && ih < height && inside > 0 else {
                        out.update(repeating: 0, count: outWidth)
                        continue
                    }
                    out.update(repeating: 0, count: first)
                    let source = plane + ih * width + start, target = out + first
                    if sw == 1 {
                        target.update(from: source, count: inside)
                    } else {
                        loops.gather(target, source, inside, sw)
                    }
                    (out + first + inside).update(repeating: 0, count: outWidth - first - inside)
                }
            }
        }
    }

    /// Stride 1 with the output the input's size (InceptionV3's 3x3, 1x7 and 7x1 convolutions).
    var isSameSize: Bool { window.stride == (1, 1) && window.output == window.input }

    /// Rows `rows` of one im2col row of a same-size convolution: the plane shifted by (rows,
    /// columns), zeros where the shift leaves it. Copied in one piece over every row the shift
    /// keeps; the few columns that piece wraps into from the neighbouring row are zeroed after.
    private func shiftedPlane(_ plane: UnsafePointer<Float>, by shift: (rows: Int, columns: Int), rows: Range<Int>,
                              into row: UnsafeMutablePointer<Float>) {
        let (height, width) = window.input
        let firstRow = min(max(-shift.rows, rows.lowerBound), rows.upperBound)
        let endRow = max(min(height - shift.rows, rows.upperBound), firstRow)
        let (before, after) = (max(0, -shift.columns), max(0, shift.columns))
        let out = row - rows.lowerBound * width  // indexed by the plane's own positions
        guard endRow > firstRow, before + after < width else {
            row.update(repeating: 0, count: rows.count * width)
            return
        }
        let start = firstRow * width + before, end = endRow * width - after
        (out + rows.lowerBound * width).update(repeating: 0, count: start - rows.lowerBound * width)
        (out + start).update(from: plane + start + shift.rows * width + shift.columns, count: end - start)
        (out + end).update(repeating: 0, count: rows.upperBound * width - end)
        for h in firstRow..<endRow {
            let line = out + h * width
            if h > firstRow { for i in 0..<before { line[i] = 0 } }
            if h < endRow - 1 { for i in (width - after)..<width { line[i] = 0 } }
        }
    }

    /// Depthwise convolution, one channel at a time, vectorised along the output row. The channel
    /// is copied into a zero-padded plane whose rows are split into `stride` phases (for stride 2,
    /// even and odd columns apart), so for every tap the inputs of 8 neighbouring outputs are 8
    /// consecutive floats. Runs of 8 outputs are computed several at a time (along the row, or
    /// from the next rows when a row is short): independent sums keep the adders busy instead of
    /// waiting on one sum's latency. Bias starts the sums; a Relu or Clip clamps them before they
    /// are stored, another activation runs on the finished channel while it is in cache. The loops
    /// are KirokuKernels' DepthwiseChannel, in the build `context.kernels` names.
    private func depthwise(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, context: KernelContext) {
        guard let layout = depthwiseLayout else { return }
        let taps = window.kernel.h * window.kernel.w
        let (height, width) = window.input
        let loops = context.loops, clamp = activation?.bounds
        // One padded plane per thread, its padding zeroed once: each channel rewrites the rest.
        let floats = layout.plane.floats
        context.scratch.update(repeating: 0, count: context.threads * floats)
        context.team.parallelFor(inChannels) { channel, worker in
            let out = y + channel * outputPlane, padded = context.scratch + worker * floats
            layout.plane.fill(x + channel * height * width, into: padded, loops: loops)
            layout.plane.tapOffsets.withUnsafeBufferPointer { offsets in
                layout.runs.withUnsafeBufferPointer { runs in
                    loops.depthwiseAccumulate(UnsafePointer(padded), offsets, runs, weights + channel * taps, bias?[channel] ?? 0,
                                              clamp ?? -.infinity ... .infinity, out)
                }
            }
            if clamp == nil { activation?.apply(UnsafeMutableBufferPointer(start: out, count: outputPlane), loops: loops) }
        }
    }
}

/// A channel's plane copied with zero padding (KirokuKernels' PaddedPlane): rows of `rowLength`
/// floats split into `stride` phases of `phaseLength`; a phase holds the padded columns p with
/// p % stride == phase, at p / stride, plus `slack` floats a loop may read past a row's end.
/// At stride 1, rows may share their padding instead: see init(sharingColumnPadding:).
struct PaddedPlaneLayout {
    let paddedHeight: Int, rowLength: Int
    /// Zeros after the last row (where rows share their padding).
    let trailing: Int
    let window: Window2D
    /// Per tap, its input's offset from the tap-0 input, in floats.
    let tapOffsets: [Int]
    /// Per phase: the first input column landing in it ((w + left) % stride == phase) and where.
    let phaseStarts: [(first: Int, offset: Int)]

    init(_ window: Window2D, slack: Int) {
        let paddedWidth = window.input.w + window.pads.left + window.pads.right
        self.init(window, phaseLength: (paddedWidth + window.stride.w - 1) / window.stride.w + slack, trailing: 0)
    }

    /// A stride-1 layout whose rows share their padding columns: rows of width + max(left, right)
    /// floats, the zeros after one row's data being the next row's left padding too, and
    /// min(left, right) zeros after the last row, which its last taps reach. A direct
    /// convolution's flat strips then compute fewer padding columns (InceptionV3's 5x5 layers over
    /// 35x35: 37 positions a row instead of 39).
    init(sharingColumnPadding window: Window2D) {
        let (left, right) = (window.pads.left, window.pads.right)
        self.init(window, phaseLength: window.input.w + max(left, right), trailing: min(left, right))
    }

    private init(_ window: Window2D, phaseLength: Int, trailing: Int) {
        let (kw, sw, dh, dw) = (window.kernel.w, window.stride.w, window.dilation.h, window.dilation.w)
        let left = window.pads.left
        self.window = window
        self.trailing = trailing
        paddedHeight = window.input.h + window.pads.top + window.pads.bottom
        let rowLength = sw * phaseLength
        self.rowLength = rowLength
        tapOffsets = (0..<(window.kernel.h * kw)).map { tap in
            let (ki, kj) = (tap / kw, tap % kw)
            return ki * dh * rowLength + (kj * dw) % sw * phaseLength + (kj * dw) / sw
        }
        phaseStarts = (0..<sw).map { phase in
            let first = ((phase - left) % sw + sw) % sw
            return (first: first, offset: phase * phaseLength + (first + left) / sw)
        }
    }

    /// Floats one padded channel takes.
    var floats: Int { paddedHeight * rowLength + trailing }

    /// Copies `channels` planes from `x` into padded copies `floats` apart from `target`, padding
    /// zeroed, a channel per loop index.
    func fill(channels: Int, of x: UnsafePointer<Float>, into target: UnsafeMutablePointer<Float>, context: KernelContext) {
        let plane = window.input.h * window.input.w
        context.team.parallelFor(channels) { c in
            (target + c * floats).update(repeating: 0, count: floats)
            fill(x + c * plane, into: target + c * floats, loops: context.loops)
        }
    }

    /// Copies the channel at `plane` into `padded` (`floats` floats, its padding already zero),
    /// with `loops`' PaddedPlane.fill.
    func fill(_ plane: UnsafePointer<Float>, into padded: UnsafeMutablePointer<Float>, loops: KernelLoops) {
        phaseStarts.withUnsafeBufferPointer { phaseStarts in
            loops.padPlane(plane, window.input.h, window.input.w, window.pads.top, window.pads.left, window.stride.w,
                           rowLength, paddedHeight, phaseStarts, padded)
        }
    }
}

/// The depthwise loop's geometry: the padded plane with 8 floats of slack per phase (the last
/// vector of a row may read past its end), and each run of 8 outputs.
private struct DepthwiseLayout {
    let plane: PaddedPlaneLayout
    /// Each run of 8 outputs: where its tap-0 inputs start in the plane, where it writes, how many.
    let runs: [(source: Int, target: Int, count: Int)]

    init(_ window: Window2D) {
        let plane = PaddedPlaneLayout(window, slack: 8)
        self.plane = plane
        let outWidth = window.output.w, vectorsPerRow = (outWidth + 7) / 8
        runs = (0..<(window.output.h * vectorsPerRow)).map { index in
            let (oh, ow) = (index / vectorsPerRow, index % vectorsPerRow * 8)
            return (source: oh * window.stride.h * plane.rowLength + ow, target: oh * outWidth + ow, count: min(8, outWidth - ow))
        }
    }
}
