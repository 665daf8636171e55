import COpenBLAS

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
    /// Applied as each part of the output is stored, after the bias and any fused residual.
    var activation: Activation?
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
        return isPointwise ? 0 : (groupPerThread(threads: threads) ? threads : 1) * columnRows * outputPlane
    }

    /// Whether a group runs on one thread (`byGroups`): groups enough for every thread, each
    /// group's unrolled input at most `bandAbove` (a slot per thread).
    func groupPerThread(threads: Int) -> Bool {
        groups > 1 && groups >= threads && columnRows * outputPlane * 4 <= Self.bandAbove
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
            if groupPerThread(threads: context.threads) {
                byGroups(x, y, added: added, context: context)
                continue
            }
            let groupIn = inChannels / groups, groupOut = outChannels / groups
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
                    product(group: g, channels: firstRow..<min(firstRow + rowTile, groupOut), columns: start,
                            count: min(columnTile, outputPlane - start), source: source + start, ldb: outputPlane, output: y, added: added,
                            loops: context.loops)
                }
            }
        }
    }

    /// A grouped convolution, a group at a time on each thread: the group's input unrolled into
    /// the thread's scratch (unless pointwise) and multiplied there, while it is in cache (a group
    /// of ResNeXt's 4 to 32 channels is too small a product to share between threads); for groups
    /// enough for the threads (`groupPerThread`).
    private func byGroups(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, context: KernelContext) {
        let inputPlane = window.input.h * window.input.w, groupIn = inChannels / groups
        context.team.parallelFor(groups) { g, worker in
            let group = x + g * groupIn * inputPlane
            var source = group
            if !isPointwise {
                let buffer = context.scratch + worker * columnRows * outputPlane
                for c in 0..<groupIn {
                    im2col(group + c * inputPlane, channel: c, rows: 0..<window.output.h, into: buffer, loops: context.loops)
                }
                source = UnsafePointer(buffer)
            }
            product(group: g, channels: 0..<outChannels / groups, columns: 0, count: outputPlane, source: source, ldb: outputPlane,
                    output: y, added: added, loops: context.loops)
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
