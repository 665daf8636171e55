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
            if stride == 2 {
                // Both phases from one pass: 16 consecutive floats, their even half to the phase
                // holding the even columns, their odd half to the other.
                let (even, odd) = phaseStarts[0].first == 0 ? (phaseStarts[0].offset, phaseStarts[1].offset)
                                                             : (phaseStarts[1].offset, phaseStarts[0].offset)
                var w = 0
                while w + 16 <= width {
                    let pair = UnsafeRawPointer(source + w).loadUnaligned(as: SIMD16<Float>.self)
                    UnsafeMutableRawPointer(row + even + w / 2).storeBytes(of: pair.evenHalf, as: SIMD8<Float>.self)
                    UnsafeMutableRawPointer(row + odd + w / 2).storeBytes(of: pair.oddHalf, as: SIMD8<Float>.self)
                    w &+= 16
                }
                while w < width {
                    row[(w % 2 == 0 ? even : odd) + w / 2] = source[w]
                    w &+= 1
                }
                continue
            }
            for (first, offset) in phaseStarts {
                let target = row + offset
                var w = first, i = 0
                while w < width {
                    target[i] = source[w]
                    w &+= stride
                    i &+= 1
                }
            }
        }
    }
}
