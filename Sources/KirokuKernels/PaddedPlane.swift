/// A channel's plane copied into a zero-padded buffer whose rows are split into `stride` phases
/// (for stride 2, even and odd columns apart): what the depthwise and direct convolutions read.
public enum PaddedPlane {
    /// Fills `padded` (paddedHeight x rowLength floats, the padding already zero: this writes the
    /// same places for every plane of a layout, so a buffer reused for one layout is zeroed once)
    /// with `plane` (height x width):
    /// row h at padded row h + top, each row split into `stride` phases: input column w goes to
    /// offset `phaseStarts[(w + left) % stride].offset + (w - first) / stride` of its row, so the
    /// inputs of neighbouring outputs are consecutive floats for every tap.
    public static func fill(_ plane: UnsafePointer<Float>, height: Int, width: Int, top: Int, left: Int, stride: Int,
                            rowLength: Int, paddedHeight: Int, phaseStarts: UnsafeBufferPointer<(first: Int, offset: Int)>,
                            into padded: UnsafeMutablePointer<Float>) {
        for h in 0..<height {
            let row = padded + (h + top) * rowLength, source = plane + h * width
            if stride == 1 {
                (row + left).update(from: source, count: width)
                continue
            }
            for (first, offset) in phaseStarts {
                let target = row + offset
                var w = first, i = 0
                if stride == 2 {
                    // Two phases: 8 outputs' worth of every other column from 16 consecutive floats.
                    while w + 16 <= width {
                        let pair = UnsafeRawPointer(source + w).loadUnaligned(as: SIMD16<Float>.self)
                        UnsafeMutableRawPointer(target + i).storeBytes(of: pair.evenHalf, as: SIMD8<Float>.self)
                        w &+= 16
                        i &+= 8
                    }
                }
                while w < width {
                    target[i] = source[w]
                    w &+= stride
                    i &+= 1
                }
            }
        }
    }
}
