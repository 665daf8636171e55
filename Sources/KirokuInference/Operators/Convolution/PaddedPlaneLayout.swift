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
