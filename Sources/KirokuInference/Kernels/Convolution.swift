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

/// Conv over NCHW: 1x1 stride-1 unpadded convolutions are one sgemm on the activations; other
/// grouped convolutions go through im2col + sgemm; depthwise ones run a direct loop. Bias and a
/// fused activation are applied in the epilogue.
struct ConvolutionKernel: Kernel {
    let batch: Int
    let inChannels: Int
    let outChannels: Int
    let groups: Int
    let window: Window2D
    /// Weights [outChannels, inChannels / groups * kh * kw]: ONNX's layout is already sgemm's.
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>?
    let activation: Activation?
    /// Depthwise weights pre-packed: for each block of 8 channels, kh * kw taps of 8 lanes.
    private let depthwiseTaps: [SIMD8<Float>]

    /// Fixes the geometry and pre-packs the weights the chosen implementation reads.
    init(batch: Int, inChannels: Int, outChannels: Int, groups: Int, window: Window2D,
         weights: UnsafePointer<Float>, bias: UnsafePointer<Float>?, activation: Activation?) {
        self.batch = batch
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.groups = groups
        self.window = window
        self.weights = weights
        self.bias = bias
        self.activation = activation
        let taps = window.kernel.h * window.kernel.w
        var packed: [SIMD8<Float>] = []
        if groups == inChannels && groups == outChannels {
            packed = [SIMD8<Float>](repeating: .zero, count: (inChannels + 7) / 8 * taps)
            for channel in 0..<inChannels {
                for tap in 0..<taps { packed[channel / 8 * taps + tap][channel % 8] = weights[channel * taps + tap] }
            }
        }
        depthwiseTaps = packed
    }

    var isDepthwise: Bool { groups == inChannels && groups == outChannels }
    var isPointwise: Bool {
        window.kernel == (1, 1) && window.stride == (1, 1) && window.pads == (0, 0, 0, 0)
    }
    var columnRows: Int { inChannels / groups * window.kernel.h * window.kernel.w }
    var outputPlane: Int { window.output.h * window.output.w }
    var scratchCount: Int { isDepthwise || isPointwise ? 0 : columnRows * outputPlane }
    var multiplyAdds: Int { batch * outChannels * columnRows * outputPlane }
    var variant: String? {
        let size = "\(window.kernel.h)x\(window.kernel.w)/\(window.stride.h)"
        return isDepthwise ? "depthwise \(size)" : isPointwise ? "pointwise sgemm" : "im2col sgemm \(size)"
    }

    func run(_ context: KernelContext) {
        let input = context.inputs[0], output = context.outputs[0]
        let inputPlane = window.input.h * window.input.w
        let groupIn = inChannels / groups, groupOut = outChannels / groups
        for n in 0..<batch {
            let x = input + n * inChannels * inputPlane
            let y = output + n * outChannels * outputPlane
            if isDepthwise {
                depthwise(x, y, threads: context.threads)
                continue
            }
            for g in 0..<groups {
                let source: UnsafePointer<Float>
                if isPointwise {
                    source = x + g * groupIn * inputPlane
                } else {
                    im2col(x + g * groupIn * inputPlane, channels: groupIn, into: context.scratch, threads: context.threads)
                    source = UnsafePointer(context.scratch)
                }
                // OpenBLAS runs single-threaded; the output columns are split across our threads.
                let filters = weights + g * groupOut * columnRows, target = y + g * groupOut * outputPlane
                let chunk = (outputPlane + context.threads - 1) / context.threads
                parallelFor(context.threads, threads: context.threads) { part in
                    let start = part * chunk, count = min(chunk, outputPlane - start)
                    guard count > 0 else { return }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                                Int32(groupOut), Int32(count), Int32(columnRows),
                                1, filters, Int32(columnRows),
                                source + start, Int32(outputPlane),
                                0, target + start, Int32(outputPlane))
                }
            }
            parallelFor(outChannels, threads: context.threads) { channel in
                epilogue(y + channel * outputPlane, channel: channel)
            }
        }
    }

    private func epilogue(_ plane: UnsafeMutablePointer<Float>, channel: Int) {
        let values = UnsafeMutableBufferPointer(start: plane, count: outputPlane)
        if let bias {
            let b = bias[channel]
            for i in values.indices { values[i] += b }
        }
        activation?.apply(values)
    }

    /// Unrolls windows into rows (channel, ki, kj) by columns (output position), zeros for padding.
    private func im2col(_ x: UnsafePointer<Float>, channels: Int, into column: UnsafeMutablePointer<Float>, threads: Int) {
        let (kh, kw) = window.kernel
        parallelFor(channels, threads: threads) { c in
            let plane = x + c * window.input.h * window.input.w
            for ki in 0..<kh {
                for kj in 0..<kw {
                    let row = column + ((c * kh + ki) * kw + kj) * outputPlane
                    for oh in 0..<window.output.h {
                        let ih = oh * window.stride.h - window.pads.top + ki * window.dilation.h
                        let out = row + oh * window.output.w
                        guard ih >= 0 && ih < window.input.h else {
                            out.update(repeating: 0, count: window.output.w)
                            continue
                        }
                        let line = plane + ih * window.input.w
                        for ow in 0..<window.output.w {
                            let iw = ow * window.stride.w - window.pads.left + kj * window.dilation.w
                            out[ow] = iw >= 0 && iw < window.input.w ? line[iw] : 0
                        }
                    }
                }
            }
        }
    }

    /// Depthwise convolution on blocks of 8 channels. Each block's input is packed into a
    /// zero-padded buffer with the 8 channels interleaved (one SIMD8 per pixel), so the inner loop
    /// has no bounds checks and every multiply-add covers 8 channels; the results are written
    /// back to NCHW, then bias and activation run per channel.
    private func depthwise(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, threads: Int) {
        let (kh, kw) = window.kernel
        let (sh, sw) = window.stride, (dh, dw) = window.dilation
        let (height, width) = window.input, (outHeight, outWidth) = window.output
        let paddedHeight = height + window.pads.top + window.pads.bottom
        let paddedWidth = width + window.pads.left + window.pads.right
        let blocks = (inChannels + 7) / 8
        parallelFor(blocks, threads: threads) { block in
            let first = block * 8, lanes = min(8, inChannels - first)
            withUnsafeTemporaryAllocation(of: SIMD8<Float>.self, capacity: paddedHeight * paddedWidth + width) { padded in
                padded.initialize(repeating: .zero)
                // Missing lanes of the last block read a row of zeros kept past the padded image.
                let zeros = UnsafePointer<Float>(OpaquePointer(padded.baseAddress! + paddedHeight * paddedWidth))
                for h in 0..<height {
                    let source = (0..<8).map { lane in lane < lanes ? x + ((first + lane) * height + h) * width : zeros }
                    let (p0, p1, p2, p3, p4, p5, p6, p7) = (source[0], source[1], source[2], source[3], source[4], source[5], source[6], source[7])
                    let row = padded.baseAddress! + (h + window.pads.top) * paddedWidth + window.pads.left
                    for w in 0..<width {
                        row[w] = SIMD8(p0[w], p1[w], p2[w], p3[w], p4[w], p5[w], p6[w], p7[w])
                    }
                }
                depthwiseTaps.withUnsafeBufferPointer { all in
                    let taps = UnsafeBufferPointer(rebasing: all[(block * kh * kw)..<((block + 1) * kh * kw)])
                    for oh in 0..<outHeight {
                        for ow in 0..<outWidth {
                            var sum = SIMD8<Float>.zero
                            for ki in 0..<kh {
                                let row = padded.baseAddress! + (oh * sh + ki * dh) * paddedWidth + ow * sw
                                // Multiply then add: a fused addingProduct becomes a libm call per lane on baseline x86-64.
                                for kj in 0..<kw { sum += taps[ki * kw + kj] * row[kj * dw] }
                            }
                            let index = oh * outWidth + ow
                            for lane in 0..<lanes { y[(first + lane) * outputPlane + index] = sum[lane] }
                        }
                    }
                }
            }
            for lane in 0..<lanes { epilogue(y + (first + lane) * outputPlane, channel: first + lane) }
        }
    }
}
