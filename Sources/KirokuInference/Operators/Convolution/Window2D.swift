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
        // Bounded, so that no sum or product of them overflows (a hostile model's pads of 2^62 trapped).
        let givenPads = node.ints("pads") ?? []
        guard (strides + dilations + givenPads + [kernel.0, kernel.1]).allSatisfy({ $0 <= ShapeMath.maximumElements }) else {
            throw InferenceError(.invalidShape, "\(node.label): strides \(strides), dilations \(dilations), pads \(givenPads) or window \(kernel) "
                + "over the engine's limit of \(ShapeMath.maximumElements)")
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
