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
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                            Int32(groupOut), Int32(outputPlane), Int32(columnRows),
                            1, weights + g * groupOut * columnRows, Int32(columnRows),
                            source, Int32(outputPlane),
                            0, y + g * groupOut * outputPlane, Int32(outputPlane))
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

    /// Depthwise convolution, one channel per task. For each output row and kernel tap, the
    /// output columns whose input column lies inside the image form one range, so the inner loop
    /// is a branch-free multiply-add over contiguous (or strided) memory that LLVM vectorises.
    private func depthwise(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, threads: Int) {
        let (kh, kw) = window.kernel
        let (sh, sw) = window.stride, (dh, dw) = window.dilation
        let (height, width) = window.input, (outHeight, outWidth) = window.output
        let (top, left) = (window.pads.top, window.pads.left)
        // For each tap kj, the output columns [first, last] that read inside the row, and the
        // input column read by `first`.
        let columns = (0..<kw).map { kj -> (first: Int, last: Int, input: Int) in
            let shift = kj * dw - left
            let first = max(0, shift >= 0 ? 0 : (-shift + sw - 1) / sw)
            let last = min(outWidth - 1, (width - 1 - shift) >= 0 ? (width - 1 - shift) / sw : -1)
            return (first, last, first * sw + shift)
        }
        parallelFor(inChannels, threads: threads) { c in
            let plane = x + c * height * width
            let filter = weights + c * kh * kw
            let out = y + c * outputPlane
            out.update(repeating: bias?[c] ?? 0, count: outputPlane)
            for oh in 0..<outHeight {
                let row = out + oh * outWidth
                for ki in 0..<kh {
                    let ih = oh * sh - top + ki * dh
                    guard ih >= 0 && ih < height else { continue }
                    let line = plane + ih * width
                    for kj in 0..<kw {
                        let (first, last, start) = columns[kj]
                        guard first <= last else { continue }
                        let weight = filter[ki * kw + kj]
                        let source = line + start, target = row + first
                        if sw == 1 {
                            for i in 0...(last - first) { target[i] += weight * source[i] }
                        } else {
                            for i in 0...(last - first) { target[i] += weight * source[i * sw] }
                        }
                    }
                }
            }
            activation?.apply(UnsafeMutableBufferPointer(start: out, count: outputPlane))
        }
    }
}
