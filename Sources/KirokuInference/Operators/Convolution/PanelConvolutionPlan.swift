/// A convolution the other direct plans do not take (strided ones over narrow rows, 1x1 ones over
/// planes their strips and tiles do not fit), where the build's packed products are 16 lanes to a
/// register: a run of output positions at a time, its input unrolled (im2col) straight into
/// panels of 16 positions with a row of ones for the bias, then the weights times those panels by
/// KirokuKernels' PackedProduct (output channels broadcast, two panels at once), written to the
/// output's planes. sgemm (OpenBLAS, whose kernel for this CPU may be 8 lanes wide) packed both
/// operands on every call besides the unrolled copy.
struct PanelConvolutionPlan: DirectMethod {
    let multiply: KernelLoops.PackedMultiply
    let inChannels: Int, outChannels: Int
    let window: Window2D
    /// Rows of a panel: every input channel's taps, then the bias's row of ones.
    let depth: Int
    /// Panels one work item unrolls and multiplies (its unrolled input about `itemBytes`).
    let panelsPerItem: Int
    /// Weights [output channel][depth]: the convolution's, then the channel's bias.
    let weights: UnsafePointer<Float>

    var label: String { "im2col panels" }
    var addsResidual: Bool { true }
    var plane: Int { window.output.h * window.output.w }
    var panels: Int { (plane + Self.width - 1) / Self.width }

    /// A plan, or nil where `loops` does not take convolutions through packed panels or the
    /// convolution is grouped.
    init?(window: Window2D, inChannels: Int, outChannels: Int, groups: Int, weights: Tensor, bias: Tensor?,
          loops: KernelLoops, store: (Tensor) -> UnsafePointer<Float>) {
        guard let multiply = loops.packedProduct, loops.panelProducts, groups == 1 else { return nil }
        self.multiply = multiply
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.window = window
        let taps = window.kernel.h * window.kernel.w, depth = inChannels * taps + 1
        self.depth = depth
        panelsPerItem = max(2, Self.itemBytes / (depth * Self.width * 4) / 2 * 2)
        var packed = Tensor(zeros: [outChannels * depth])
        for o in 0..<outChannels {
            for k in 0..<depth - 1 { packed.data[o * depth + k] = weights.data[o * (depth - 1) + k] }
            packed.data[o * depth + depth - 1] = bias?.data[o] ?? 0
        }
        self.weights = store(packed)
    }

    /// One item's unrolled panels per thread.
    func scratchCount(threads: Int) -> Int { threads * panelsPerItem * depth * Self.width }

    func run(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, added: UnsafePointer<Float>?, activation: Activation?,
             context: KernelContext) {
        // Two items per thread at least, where the panels allow (one item of a small unrolled input left a thread idle).
        let threads = context.threads, perItem = max(1, min(panelsPerItem, (panels + 2 * threads - 1) / (2 * threads)))
        let bounds = activation?.bounds ?? -.infinity ... .infinity, items = (panels + perItem - 1) / perItem
        let itemFloats = panelsPerItem * depth * Self.width
        context.team.parallelFor(items) { item, worker in
            let first = item * perItem, count = min(perItem, panels - first)
            let unrolled = context.scratch + worker * itemFloats
            for p in 0..<count { unroll(x, panel: first + p, into: unrolled + p * depth * Self.width) }
            // The panels as PackedProduct reads them: panel p of the call at (p * depth + k) * 16,
            // the output's columns counted from this item's first position.
            let column = first * Self.width, columns = min(count * Self.width, plane - column)
            multiply(weights, depth, depth, unrolled, plane - column, 0..<outChannels, 0..<count, nil, added == nil ? bounds : -.infinity ... .infinity,
                     y + column, plane)
            // A fused residual added (then the clamp) while the item's output is in cache.
            if let added {
                for o in 0..<outChannels {
                    let row = y + o * plane + column, other = added + o * plane + column
                    for i in 0..<columns { row[i] = min(max(row[i] + other[i], bounds.lowerBound), bounds.upperBound) }
                }
            }
        }
        applyAfter(activation, to: y, channels: outChannels, plane: plane, context: context)
    }

    /// Panel `panel`'s rows: for each input channel c and tap (ki, kj), the 16 inputs of output
    /// positions 16 · panel + j (zero in the padding and past the plane), then 16 ones. Positions
    /// of one output row read a run of the input row at the window's stride.
    private func unroll(_ x: UnsafePointer<Float>, panel: Int, into target: UnsafeMutablePointer<Float>) {
        let (height, width) = window.input, outWidth = window.output.w, inputPlane = height * width
        let (kh, kw) = window.kernel
        let start = panel * Self.width, end = min(start + Self.width, plane)
        (target + (depth - 1) * Self.width).update(repeating: 1, count: Self.width)
        if end - start < Self.width {
            for k in 0..<depth - 1 { (target + k * Self.width + end - start).update(repeating: 0, count: Self.width - (end - start)) }
        }
        var position = start
        while position < end {
            // The run of positions in one output row.
            let oh = position / outWidth, ow = position % outWidth, run = min(end - position, outWidth - ow), j = position - start
            for c in 0..<inChannels {
                let channel = x + c * inputPlane
                for ki in 0..<kh {
                    let ih = oh * window.stride.h - window.pads.top + ki * window.dilation.h
                    for kj in 0..<kw {
                        let row = target + ((c * kh + ki) * kw + kj) * Self.width + j
                        guard ih >= 0, ih < height else {
                            row.update(repeating: 0, count: run)
                            continue
                        }
                        let iw = ow * window.stride.w - window.pads.left + kj * window.dilation.w, source = channel + ih * width
                        for i in 0..<run {
                            let column = iw + i * window.stride.w
                            row[i] = column >= 0 && column < width ? source[column] : 0
                        }
                    }
                }
            }
            position += run
        }
    }

    /// Output positions of a panel (KirokuKernels' PackedProduct.panelColumns).
    static let width = 16
    /// A work item's unrolled input: half the L2 cache.
    static let itemBytes = 512 * 1024
}
