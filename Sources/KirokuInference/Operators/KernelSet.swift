import Foundation
import KirokuKernels
import KirokuKernelsAVX2
import KirokuKernelsVNNI
import KirokuKernelsAVX512

/// Which build of the innermost loops (module KirokuKernels) a session runs: the AVX2 build
/// (256-bit vectors, fused multiply-add) on CPUs that have AVX2 and FMA, the portable one elsewhere;
/// on CPUs with AVX-512 VNNI too, the AVX2 build with 8-bit products through VNNI (KirokuKernelsVNNI).
public enum KernelSet: String, Sendable, CaseIterable {
    case portable
    case avx2
    case vnni

    /// The best build this CPU runs, unless the environment's KIROKU_KERNELS names another
    /// ("portable" to compare, or on a CPU whose features are misreported).
    public static let detected: KernelSet = choose(requested: ProcessInfo.processInfo.environment["KIROKU_KERNELS"],
                                                   supported: supported())

    /// The builds this CPU can run.
    public static func supported(cpuinfo: String? = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) -> [KernelSet] {
        guard let flags = cpuinfo?.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else { return [.portable] }
        let features = Set(flags.split(separator: " ").map(String.init))
        return allCases.filter { features.isSuperset(of: $0.features) }
    }

    /// The CPU features (as /proc/cpuinfo names them) this build needs.
    var features: [String] {
        switch self {
        case .portable: []
        case .avx2: ["avx2", "fma"]
        // What the build's -target-cpu cascadelake lets the compiler use.
        case .vnni: ["avx2", "fma", "avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni"]
        }
    }

    /// What is wrong with a requested build (KIROKU_KERNELS), nil when it is unset or usable: the
    /// commands refuse to start on it rather than quietly run another build.
    public static func problem(requested: String?, supported: [KernelSet]) -> String? {
        guard let requested else { return nil }
        guard let set = KernelSet(rawValue: requested) else {
            let names = allCases.map(\.rawValue)
            return "KIROKU_KERNELS=\(requested) is not a kernel build: use \(names.dropLast().joined(separator: ", ")) or \(names.last!), "
                + "or unset it for the best this CPU runs"
        }
        return supported.contains(set) ? nil : "KIROKU_KERNELS=\(requested) needs \(set.features.joined(separator: ", ")), which this CPU "
            + "lacks in part: use \(supported.map(\.rawValue).joined(separator: " or ")), or unset it"
    }

    /// The requested build if this CPU runs it, else the last (best) supported one.
    public static func choose(requested: String?, supported: [KernelSet]) -> KernelSet {
        if let requested, let set = KernelSet(rawValue: requested), supported.contains(set) { return set }
        return supported.last ?? .portable
    }
}

/// The innermost loops of one build of KirokuKernels, for the kernels to call.
struct KernelLoops: Sendable {
    /// The build these functions come from, as that module names itself ("avx2" or "portable").
    let build: String
    typealias Pool = @Sendable (UnsafePointer<Float>, Int, UnsafeBufferPointer<(first: Int, count: Int)>, Int,
                                (left: Int, taps: Int, stride: Int, dilation: Int, outputs: Int), Bool,
                                (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?, UnsafeMutablePointer<Float>, Int,
                                UnsafeMutablePointer<Float>) -> Void
    /// WindowPooling.plane.
    let pool: Pool
    typealias BlockPool = @Sendable (UnsafePointer<Float>, Int, UnsafeBufferPointer<(first: Int, count: Int)>, Int,
                                     UnsafeBufferPointer<(first: Int, count: Int)>, Int, Bool,
                                     (rows: UnsafePointer<Float>, columns: UnsafePointer<Float>)?, UnsafePointer<Float>?,
                                     UnsafeMutablePointer<Float>) -> Void
    /// WindowPooling.block.
    let blockPool: BlockPool
    /// WindowPooling.samePlane.
    let samePool: @Sendable (UnsafePointer<Float>, Int, Int, (h: Int, w: Int), (top: Int, left: Int), Bool, UnsafePointer<Float>?,
                             UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void
    let gather: @Sendable (UnsafeMutablePointer<Float>, UnsafePointer<Float>, Int, Int) -> Void
    let clamp: @Sendable (UnsafeMutablePointer<Float>, Int, Float, Float) -> Void
    let leakyRelu: @Sendable (UnsafeMutablePointer<Float>, Int, Float) -> Void
    let hardSigmoid: @Sendable (UnsafeMutablePointer<Float>, Int, Float, Float) -> Void
    let hardSwish: @Sendable (UnsafeMutablePointer<Float>, Int) -> Void
    /// Activations.sigmoid, swish, gelu, geluTanh, erf, tanh: `activationLanes` lanes at a time through a vector exp and erf.
    var sigmoid, gelu, geluTanh, erf, tanh: @Sendable (UnsafeMutablePointer<Float>, Int) -> Void
    var swish: @Sendable (UnsafeMutablePointer<Float>, Int, Float) -> Void
    var activationLanes: Int
    /// Activations.softmax: one contiguous row.
    var softmax: @Sendable (UnsafePointer<Float>, UnsafeMutablePointer<Float>, Int) -> Void
    /// Loops.sum: a run of values summed, each rounded through a QuantizeLinear → DequantizeLinear step first where one is given.
    let sum: @Sendable (UnsafePointer<Float>, Int, Rounding?) -> Float
    typealias Rounding = KirokuKernels.Loops.Rounding
    /// Loops.moments and normalize: a LayerNormalization row's mean and spread, then its values.
    let moments: @Sendable (UnsafePointer<Float>, Int, Float) -> (mean: Float, inverse: Float)
    let normalize: @Sendable (UnsafePointer<Float>, UnsafeMutablePointer<Float>, Int, Float, Float, UnsafePointer<Float>, UnsafePointer<Float>?) -> Void
    /// TransposeTiles.rows: rows of a matrix written as columns.
    let transposeRows: @Sendable (Range<Int>, UnsafePointer<Float>, Int, Int, UnsafeMutablePointer<Float>) -> Void
    let padPlane: @Sendable (UnsafePointer<Float>, Int, Int, Int, Int, Int, Int, Int,
                             UnsafeBufferPointer<(first: Int, offset: Int)>, UnsafeMutablePointer<Float>) -> Void
    let depthwiseAccumulate: @Sendable (UnsafePointer<Float>, UnsafeBufferPointer<Int>,
                                        UnsafeBufferPointer<(source: Int, target: Int, count: Int)>,
                                        UnsafePointer<Float>, Float, ClosedRange<Float>, UnsafeMutablePointer<Float>) -> Void
    typealias DirectBlock = @Sendable (UnsafePointer<Float>, Int, Int, UnsafeBufferPointer<Int>, UnsafeBufferPointer<Int>, UnsafePointer<Float>,
                                       UnsafePointer<Float>, Int, ClosedRange<Float>, UnsafePointer<Float>?,
                                       UnsafeBufferPointer<(source: Int, target: Int)>, UnsafeMutablePointer<Float>, Int, Int, Int,
                                       UnsafeMutablePointer<Float>) -> Void
    /// DirectConvolution.block, in the builds that have it (AVX2).
    var directConvolution: DirectBlock?
    /// Output channels one DirectConvolution.block computes (its weights are packed in blocks of as many; 0 without one).
    var directBlockChannels: Int
    typealias Tiles = UnsafeBufferPointer<(position: Int, count: Int)>
    typealias TransposedBlock = @Sendable (UnsafePointer<Float>, Int, UnsafePointer<Float>, UnsafePointer<Float>, Range<Int>,
                                           ClosedRange<Float>, UnsafePointer<Float>?, Tiles, UnsafeMutablePointer<Float>, Int) -> Void
    typealias PackPositions = @Sendable (UnsafePointer<Float>, Int, Int, Tiles, UnsafeMutablePointer<Float>) -> Void
    /// DirectConvolution.transposed and its packing, in the same builds.
    var transposedPointwise: TransposedBlock?
    var packPositions: PackPositions?
    typealias InterleaveLanes = @Sendable (UnsafePointer<Float>, Int, Int, UnsafeBufferPointer<Int>, UnsafeMutablePointer<Float>) -> Void
    typealias LanesAccumulate = @Sendable (UnsafePointer<Float>, UnsafeBufferPointer<Int>, UnsafeBufferPointer<Int>, UnsafePointer<Float>,
                                           UnsafePointer<Float>, ClosedRange<Float>, Int, UnsafeMutablePointer<Float>, Int) -> Void
    /// DepthwiseLanes.interleave and .accumulate, in the same builds.
    let interleaveLanes: InterleaveLanes?
    let lanesAccumulate: LanesAccumulate?
    /// The channel-blocked layout's loops (ChannelBlocks, BlockedPointwise, BlockedDepthwise), in the same builds.
    var channelBlocks: ChannelBlockLoops?
    typealias PackedMultiply = @Sendable (UnsafePointer<Float>, Int, Int, UnsafePointer<Float>, Int, Range<Int>, Range<Int>,
                                          UnsafePointer<Float>?, ClosedRange<Float>, UnsafeMutablePointer<Float>, Int) -> Void
    /// PackedProduct.multiply, in the same builds.
    var packedProduct: PackedMultiply?
    /// Whether products with an operand known only at run time run through packed panels rather
    /// than sgemm (convolutions the direct plans do not take: PanelConvolutionPlan; MatMul of two
    /// values: MatMulKernel.runtimePanels): where the products are 16 lanes to a register.
    var panelProducts = false

    static let portable = KernelLoops(
        build: KirokuKernels.kernelBuild,
        pool: KirokuKernels.WindowPooling.plane, blockPool: KirokuKernels.WindowPooling.block,
        samePool: KirokuKernels.WindowPooling.samePlane, gather: KirokuKernels.Loops.gather,
        clamp: KirokuKernels.Loops.clamp, leakyRelu: KirokuKernels.Loops.leakyRelu,
        hardSigmoid: KirokuKernels.Loops.hardSigmoid, hardSwish: KirokuKernels.Loops.hardSwish,
        sigmoid: KirokuKernels.Activations.sigmoid, gelu: KirokuKernels.Activations.gelu, geluTanh: KirokuKernels.Activations.geluTanh,
        erf: KirokuKernels.Activations.erf, tanh: KirokuKernels.Activations.tanh, swish: KirokuKernels.Activations.swish,
        activationLanes: KirokuKernels.Activations.lanes, softmax: KirokuKernels.Activations.softmax, sum: KirokuKernels.Loops.sum,
        moments: KirokuKernels.Loops.moments, normalize: KirokuKernels.Loops.normalize,
        transposeRows: KirokuKernels.TransposeTiles.rows,
        padPlane: KirokuKernels.PaddedPlane.fill, depthwiseAccumulate: KirokuKernels.DepthwiseChannel.accumulate,
        directConvolution: nil, directBlockChannels: 0, transposedPointwise: nil, packPositions: nil, interleaveLanes: nil, lanesAccumulate: nil,
        channelBlocks: nil, packedProduct: nil)

    static let avx2 = KernelLoops(
        build: KirokuKernelsAVX2.kernelBuild,
        pool: KirokuKernelsAVX2.WindowPooling.plane, blockPool: KirokuKernelsAVX2.WindowPooling.block,
        samePool: KirokuKernelsAVX2.WindowPooling.samePlane, gather: KirokuKernelsAVX2.Loops.gather,
        clamp: KirokuKernelsAVX2.Loops.clamp, leakyRelu: KirokuKernelsAVX2.Loops.leakyRelu,
        hardSigmoid: KirokuKernelsAVX2.Loops.hardSigmoid, hardSwish: KirokuKernelsAVX2.Loops.hardSwish,
        sigmoid: KirokuKernelsAVX2.Activations.sigmoid, gelu: KirokuKernelsAVX2.Activations.gelu, geluTanh: KirokuKernelsAVX2.Activations.geluTanh,
        erf: KirokuKernelsAVX2.Activations.erf, tanh: KirokuKernelsAVX2.Activations.tanh, swish: KirokuKernelsAVX2.Activations.swish,
        activationLanes: KirokuKernelsAVX2.Activations.lanes, softmax: KirokuKernelsAVX2.Activations.softmax, sum: KirokuKernelsAVX2.Loops.sum,
        moments: KirokuKernelsAVX2.Loops.moments, normalize: KirokuKernelsAVX2.Loops.normalize,
        transposeRows: KirokuKernelsAVX2.TransposeTiles.rows,
        padPlane: KirokuKernelsAVX2.PaddedPlane.fill, depthwiseAccumulate: KirokuKernelsAVX2.DepthwiseChannel.accumulate,
        directConvolution: avx2Direct.block, directBlockChannels: avx2Direct.blockChannels, transposedPointwise: avx2Direct.transposed, packPositions: avx2Direct.pack,
        interleaveLanes: avx2Lanes.interleave, lanesAccumulate: avx2Lanes.accumulate, channelBlocks: avx2Blocks,
        packedProduct: avx2Packed)

    /// The AVX2 build's loops with the AVX-512 build's activations and its products 16 channels or
    /// positions wide (sixteen lanes in one register), for CPUs with VNNI (and so AVX-512).
    static let vnni: KernelLoops = {
        typealias Wide = KirokuKernelsAVX512.Activations
        typealias Direct = KirokuKernelsAVX512.DirectConvolution
        var loops = avx2
        (loops.sigmoid, loops.gelu, loops.geluTanh, loops.erf, loops.tanh) = (Wide.sigmoid, Wide.gelu, Wide.geluTanh, Wide.erf, Wide.tanh)
        (loops.swish, loops.activationLanes, loops.softmax) = (Wide.swish, Wide.lanes, Wide.softmax)
        (loops.directConvolution, loops.transposedPointwise, loops.packPositions) = (Direct.block, Direct.transposed, Direct.packPositions)
        loops.directBlockChannels = Direct.blockChannels
        loops.packedProduct = KirokuKernelsAVX512.PackedProduct.multiply
        loops.channelBlocks?.pointwise = KirokuKernelsAVX512.BlockedPointwise.run
        loops.channelBlocks?.pointwiseRun = KirokuKernelsAVX512.BlockedPointwise.spanRun
        loops.channelBlocks?.convolution = KirokuKernelsAVX512.BlockedConvolution.run
        loops.panelProducts = true
        return loops
    }()

    #if arch(x86_64)
    private static let avx2Direct: (block: DirectBlock?, blockChannels: Int, transposed: TransposedBlock?, pack: PackPositions?) =
        (KirokuKernelsAVX2.DirectConvolution.block, KirokuKernelsAVX2.DirectConvolution.blockChannels,
         KirokuKernelsAVX2.DirectConvolution.transposed, KirokuKernelsAVX2.DirectConvolution.packPositions)
    private static let avx2Lanes: (interleave: InterleaveLanes?, accumulate: LanesAccumulate?) =
        (KirokuKernelsAVX2.DepthwiseLanes.interleave, KirokuKernelsAVX2.DepthwiseLanes.accumulate)
    private static let avx2Packed: PackedMultiply? = KirokuKernelsAVX2.PackedProduct.multiply
    private static let avx2Blocks: ChannelBlockLoops? = ChannelBlockLoops(
        intoBlocks: KirokuKernelsAVX2.ChannelBlocks.fromPlanes, intoPlanes: KirokuKernelsAVX2.ChannelBlocks.toPlanes,
        pointwise: KirokuKernelsAVX2.BlockedPointwise.run, pointwiseRun: KirokuKernelsAVX2.BlockedPointwise.spanRun, convolution: KirokuKernelsAVX2.BlockedConvolution.run,
        depthwise: KirokuKernelsAVX2.BlockedDepthwise.rows, gathered: KirokuKernelsAVX2.BlockedDepthwise.gathered,
        winogradInput: KirokuKernelsAVX2.Winograd.transformInput, winogradOutput: KirokuKernelsAVX2.Winograd.transformOutput)
    #else
    private static let avx2Direct: (block: DirectBlock?, blockChannels: Int, transposed: TransposedBlock?, pack: PackPositions?) = (nil, 0, nil, nil)
    private static let avx2Lanes: (interleave: InterleaveLanes?, accumulate: LanesAccumulate?) = (nil, nil)
    private static let avx2Blocks: ChannelBlockLoops? = nil
    private static let avx2Packed: PackedMultiply? = nil
    #endif
}

/// The loops of the channel-blocked layout (NCHW8c; KirokuKernels' ChannelBlocks): the moves
/// between it and NCHW, and the convolutions that run on it.
struct ChannelBlockLoops: Sendable {
    typealias Move = @Sendable (UnsafePointer<Float>, Int, Range<Int>, UnsafeMutablePointer<Float>) -> Void
    typealias Pointwise = @Sendable (UnsafePointer<Float>, Int, Int, UnsafePointer<Float>, UnsafePointer<Float>, Int, Range<Int>,
                                     UnsafeBufferPointer<(position: Int, count: Int)>, ClosedRange<Float>, UnsafePointer<Float>?,
                                     UnsafeMutablePointer<Float>) -> Void
    typealias Depthwise = @Sendable (Range<Int>, UnsafePointer<Float>, (h: Int, w: Int), UnsafeMutablePointer<Float>, (h: Int, w: Int),
                                     (h: Int, w: Int), (h: Int, w: Int), (h: Int, w: Int), (top: Int, left: Int), UnsafePointer<Float>,
                                     UnsafePointer<Float>, ClosedRange<Float>) -> Void
    /// ChannelBlocks.fromPlanes and .toPlanes.
    let intoBlocks: Move, intoPlanes: Move
    /// BlockedPointwise.run.
    var pointwise: Pointwise
    /// BlockedPointwise.spanRun: positions its pairs compute at once over a span of tiles (0: tile by tile).
    var pointwiseRun: Int
    typealias Gathered = @Sendable (UnsafePointer<Float>, UnsafeBufferPointer<Int>, UnsafeBufferPointer<Int>, UnsafePointer<Float>,
                                    UnsafePointer<Float>, ClosedRange<Float>, UnsafeMutablePointer<Float>) -> Void
    typealias Convolution = @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafePointer<Int>, UnsafeBufferPointer<Int>, Int,
                                       UnsafePointer<Float>, UnsafePointer<Float>, Int, Range<Int>,
                                       UnsafeBufferPointer<(position: Int, count: Int, taps: Range<Int>)>, ClosedRange<Float>,
                                       UnsafeMutablePointer<Float>) -> Void
    /// BlockedConvolution.run.
    var convolution: Convolution
    /// BlockedDepthwise.rows and .gathered.
    let depthwise: Depthwise
    let gathered: Gathered
    typealias WinogradInput = @Sendable (UnsafePointer<Float>, Int, Int, Int, Int, Range<Int>, Int, Int, UnsafeMutablePointer<Float>) -> Void
    typealias WinogradOutput = @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Int, Int, Range<Int>, UnsafePointer<Float>,
                                          ClosedRange<Float>, UnsafePointer<Float>?, (h: Int, w: Int), UnsafeMutablePointer<Float>) -> Void
    /// Winograd.transformInput and .transformOutput.
    let winogradInput: WinogradInput
    let winogradOutput: WinogradOutput
}

extension KernelSet {
    /// This build's loops.
    var loops: KernelLoops {
        switch self {
        case .portable: .portable
        case .avx2: .avx2
        case .vnni: .vnni
        }
    }

    /// This build's integer loops.
    var integer: IntegerLoops {
        switch self {
        case .portable: .portable
        case .avx2: .avx2
        case .vnni: .vnni
        }
    }
}
