import KirokuKernels

/// The moves between floats (NCHW: [batch][channel][position]) and centred int16 levels
/// (positions by channels, [batch][position][channel]) around the integer operators.
struct LevelsLayout {
    let batch: Int, channels: Int, plane: Int

    /// [N, C, spatial...]; a vector is one image of its channels.
    init(shape: [Int]) {
        batch = shape.count > 1 ? shape[0] : 1
        channels = shape.count > 1 ? shape[1] : shape.first ?? 1
        plane = shape.dropFirst(2).reduce(1, *)
    }

    var count: Int { batch * channels * plane }

    /// `body(image, first position, count)` over blocks of 32 positions of each image, each thread
    /// taking bands of them: the levels of a block, every channel of them, stay in the first-level
    /// cache while each channel's plane is read or written (and, shared by channel, two threads
    /// would write neighbouring levels of one cache line: slower on 2 threads than on one).
    static func positionBlocks(batch: Int, plane: Int, threads: Int, team: ThreadTeam, _ body: (Int, Int, Int) -> Void) {
        let bands = min(plane, 4 * threads), block = 32
        team.parallelFor(batch * bands) { item in
            let (n, band) = (item / bands, item % bands), end = (band + 1) * plane / bands
            for first in stride(from: band * plane / bands, to: end, by: block) { body(n, first, min(block, end - first)) }
        }
    }

    /// For inputs `a` and `b` broadcast to `output` (ONNX's multidirectional broadcasting): each
    /// output element's place among the output's levels, and the place of the element of each
    /// input it reads, among that input's levels or, where `levels` is false, its row-major floats.
    static func broadcastPlaces(a: (shape: [Int], levels: Bool), b: (shape: [Int], levels: Bool), output: [Int])
        -> (y: [Int32], a: [Int32], b: [Int32]) {
        let (stridesA, stridesB) = (BinaryKernel.broadcastStrides(a.shape, to: output), BinaryKernel.broadcastStrides(b.shape, to: output))
        let (layoutY, layoutA, layoutB) = (LevelsLayout(shape: output), LevelsLayout(shape: a.shape), LevelsLayout(shape: b.shape))
        let outputStrides = strides(of: output)
        var places: (y: [Int32], a: [Int32], b: [Int32]) = ([], [], [])
        for index in 0..<output.reduce(1, *) {
            var (fromA, fromB, rest) = (0, 0, index)
            for (axis, stride) in outputStrides.enumerated() {
                let coordinate = rest / stride
                rest %= stride
                (fromA, fromB) = (fromA + coordinate * stridesA[axis], fromB + coordinate * stridesB[axis])
            }
            places.y.append(Int32(layoutY.offset(ofLogical: index)))
            places.a.append(Int32(a.levels ? layoutA.offset(ofLogical: fromA) : fromA))
            places.b.append(Int32(b.levels ? layoutB.offset(ofLogical: fromB) : fromB))
        }
        return places
    }

    /// Where the element at row-major (NCHW) index `index` of the tensor lies among its levels.
    func offset(ofLogical index: Int) -> Int {
        let (n, c, p) = (index / (channels * plane), index / plane % channels, index % plane)
        return (n * plane + p) * channels + c
    }
}

/// QuantizeLinear of floats into centred levels (IROperator.quantize): clamp(round(x / scale),
/// bounds), halves to even, NCHW in and positions by channels out.
struct QuantizeKernel: Kernel {
    let layout: LevelsLayout
    let scale: Float
    let bounds: ClosedRange<Int32>
    /// Whether a second input holds a factor per channel (of a batch of one image) that multiplies
    /// each value first: the squeeze-excitation's Mul before the QuantizeLinear, joined to it.
    var scaledByChannel = false

    var variant: String? { scaledByChannel ? "times channel factors" : nil }

    func run(_ context: KernelContext) {
        let (x, y) = (context.inputs[0], UnsafeMutableRawPointer(context.outputs[0]).assumingMemoryBound(to: Int16.self))
        let (channels, plane, loops) = (layout.channels, layout.plane, context.integerKernels.integer)
        let factors = scaledByChannel ? UnsafePointer(context.inputs[1]) : nil
        LevelsLayout.positionBlocks(batch: layout.batch, plane: plane, threads: context.threads, team: context.team) { n, first, count in
            loops.quantize(x + n * channels * plane + first, plane, channels, count, scale, factors, bounds, y + (n * plane + first) * channels,
                           channels)
        }
    }
}

/// DequantizeLinear of centred levels (IROperator.dequantize): (level + shift) · scale, where
/// shift is the QuantizeLinear's zero point less the DequantizeLinear's (0 when they agree).
struct DequantizeKernel: Kernel {
    let layout: LevelsLayout
    let scale: Float, shift: Float

    func run(_ context: KernelContext) {
        let (x, y) = (UnsafeRawPointer(context.inputs[0]).assumingMemoryBound(to: Int16.self), context.outputs[0])
        let (channels, plane, loops) = (layout.channels, layout.plane, context.integerKernels.integer)
        // Bands of positions narrower than a cache line of floats (a small plane, as a classifier's
        // last) would have two threads writing one line of each channel's plane (5x slower on 2
        // threads than on 1 for MobileNetV2's last 7x7): there, threads take runs of whole channels.
        let parts = min(channels, 4 * context.threads)
        if context.threads > 1, plane < 16 * 4 * context.threads, layout.batch * parts > 1 {
            context.team.parallelFor(layout.batch * parts) { item in
                let (n, part) = (item / parts, item % parts), first = part * channels / parts
                loops.dequantize(x + n * plane * channels + first, channels, (part + 1) * channels / parts - first, plane, scale, shift,
                                 y + (n * channels + first) * plane, plane)
            }
            return
        }
        LevelsLayout.positionBlocks(batch: layout.batch, plane: plane, threads: context.threads, team: context.team) { n, first, count in
            loops.dequantize(x + (n * plane + first) * channels, channels, channels, count, scale, shift, y + n * channels * plane + first, plane)
        }
    }
}

/// The sum of two quantized values requantized (IROperator.integerAdd): the level of
/// a · scaleA + b · scaleB (each input's scale over the output's), clamped to `bounds`.
struct IntegerAddKernel: Kernel {
    let count: Int
    let scales: (a: Float, b: Float)
    let bounds: ClosedRange<Int32>
    /// For inputs that broadcast: each output element's place among the output's, a's and b's levels.
    private var broadcast: (y: [Int32], a: [Int32], b: [Int32])? = nil

    /// The sum of two inputs of one shape.
    init(count: Int, scales: (a: Float, b: Float), bounds: ClosedRange<Int32>) {
        (self.count, self.scales, self.bounds) = (count, scales, bounds)
    }

    /// The sum of inputs of shapes `a` and `b` broadcast to `output` (ONNX's multidirectional
    /// broadcasting), each laid out as levels of its own shape.
    init(a: [Int], b: [Int], output: [Int], scales: (a: Float, b: Float), bounds: ClosedRange<Int32>) {
        self.init(count: output.reduce(1, *), scales: scales, bounds: bounds)
        broadcast = LevelsLayout.broadcastPlaces(a: (a, true), b: (b, true), output: output)
    }

    func run(_ context: KernelContext) {
        let a = UnsafeRawPointer(context.inputs[0]).assumingMemoryBound(to: Int16.self)
        let b = UnsafeRawPointer(context.inputs[1]).assumingMemoryBound(to: Int16.self)
        let y = UnsafeMutableRawPointer(context.outputs[0]).assumingMemoryBound(to: Int16.self)
        if let broadcast {
            // Rare (quantized Adds of two activations broadcast seldom): element by element.
            for i in 0..<count {
                y[Int(broadcast.y[i])] = Requantized.level(Float(a[Int(broadcast.a[i])]) * scales.a + Float(b[Int(broadcast.b[i])]) * scales.b,
                                                           bounds: bounds)
            }
            return
        }
        let (parts, loops) = (min(count / 4096 + 1, 4 * context.threads), context.integerKernels.integer)
        context.team.parallelFor(parts) { part in
            let (start, end) = (part * count / parts, (part + 1) * count / parts)
            loops.add(a + start, b + start, end - start, scales, bounds, y + start)
        }
    }
}

/// GlobalAveragePool of dequantized levels (IROperator.integerMean): each image's channel means,
/// (sum of levels / positions + shift) · scale, as floats [N, C, 1...]; the sums are exact.
struct IntegerMeanKernel: Kernel {
    let layout: LevelsLayout
    let scale: Float, shift: Float
    /// Positions summed in int32 at a time (levels within ±32,768).
    private static let chunk = 32_768

    func run(_ context: KernelContext) {
        let (x, y) = (UnsafeRawPointer(context.inputs[0]).assumingMemoryBound(to: Int16.self), context.outputs[0])
        let (channels, plane, loops) = (layout.channels, layout.plane, context.integerKernels.integer)
        // Threads take runs of whole groups of 8 channels, reading every position of them.
        let parts = max(1, min(channels / 8, context.threads))
        context.team.parallelFor(layout.batch * parts) { item in
            let (n, part) = (item / parts, item % parts)
            let (first, end) = (part * channels / parts / 8 * 8, part == parts - 1 ? channels : (part + 1) * channels / parts / 8 * 8)
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: end - first) { sums in
                withUnsafeTemporaryAllocation(of: Int64.self, capacity: end - first) { totals in
                    totals.initialize(repeating: 0)
                    for start in stride(from: 0, to: plane, by: Self.chunk) {
                        loops.channelSums(x + (n * plane + start) * channels + first, channels, end - first, min(Self.chunk, plane - start),
                                          sums.baseAddress!)
                        for c in totals.indices { totals[c] += Int64(sums[c]) }
                    }
                    for c in totals.indices { y[n * channels + first + c] = (Float(Double(totals[c]) / Double(plane)) + shift) * scale }
                }
            }
        }
    }
}

/// A Mul of dequantized levels by floats, quantized again (IROperator.integerScale): a
/// squeeze-excitation's scale of the levels by each channel's factor, positions by channels in
/// and out: level(((level + shift) · scale) · factor / divisor).
struct IntegerScaleKernel: Kernel {
    let layout: LevelsLayout
    let scaling: (scale: Float, shift: Float, divisor: Float)
    let bounds: ClosedRange<Int32>
    /// For factors other than one per channel of one image ([1, C, 1...]: an integer plan runs
    /// image by image), or an output larger than the levels: each output element's place among
    /// the output's levels, the levels' and the factors'.
    private var broadcast: (y: [Int32], a: [Int32], b: [Int32])? = nil

    /// Levels of shape `levels` by factors of shape `factors`, broadcast to `output`.
    init(levels: [Int], factors: [Int], output: [Int], scaling: (scale: Float, shift: Float, divisor: Float), bounds: ClosedRange<Int32>) {
        (layout, self.scaling, self.bounds) = (LevelsLayout(shape: output), scaling, bounds)
        let padded = [Int](repeating: 1, count: max(0, output.count - factors.count)) + factors
        if output != levels || output.count < 2 || padded.count != output.count || padded[0] != 1 || padded[1] != output[1]
            || !padded.dropFirst(2).allSatisfy({ $0 == 1 }) {
            broadcast = LevelsLayout.broadcastPlaces(a: (levels, true), b: (factors, false), output: output)
        }
    }

    var variant: String? { broadcast == nil ? "by channel" : "broadcast" }

    func run(_ context: KernelContext) {
        let (x, factors) = (UnsafeRawPointer(context.inputs[0]).assumingMemoryBound(to: Int16.self), UnsafePointer(context.inputs[1]))
        let y = UnsafeMutableRawPointer(context.outputs[0]).assumingMemoryBound(to: Int16.self)
        if let broadcast {
            // Rare (an excitation's factors are one per channel): element by element.
            for i in broadcast.y.indices {
                y[Int(broadcast.y[i])] = Requantized.level((Float(x[Int(broadcast.a[i])]) + scaling.shift) * scaling.scale * factors[Int(broadcast.b[i])]
                                                           / scaling.divisor, bounds: bounds)
            }
            return
        }
        let (channels, plane, loops) = (layout.channels, layout.plane, context.integerKernels.integer)
        LevelsLayout.positionBlocks(batch: layout.batch, plane: plane, threads: context.threads, team: context.team) { n, first, count in
            let offset = (n * plane + first) * channels
            loops.scaleChannels(x + offset, channels, channels, count, scaling, factors, bounds, y + offset)
        }
    }
}
