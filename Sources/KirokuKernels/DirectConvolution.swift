#if KIROKU_AVX2
/// A convolution computed from its input as it lies, with no unrolled (im2col) copy and no
/// packing per call: 6 output channels by 16 output positions at a time, in 12 vector sums that
/// stay in registers while every input channel and tap is added (2 loads and 6 broadcasts per 12
/// fused multiply-adds). Only in the AVX2 build: with SSE's 16 narrower registers the sums spill.
public enum DirectConvolution {
    /// Output channels one block computes; the packed weights interleave them.
    public static let blockChannels = 6
    /// Output positions one strip computes (two vectors).
    public static let stripLength = 16

    /// For every strip (in order, so its input stays in cache across blocks), each block b of 6
    /// channels and each of the first `rows` channels r = 6b + j:
    /// output[r * outputStride + strip.target + i] (i in 0..<16) = bias[r] + residual at the same
    /// place (if given) + the sum over input channels c and taps t of
    /// weights[((b * channels + c) * taps + t) * 6 + j] * input[c * channelStride + strip.source + tapOffsets[t] + i],
    /// clamped to `bounds` (a fused Relu or Clip; -inf...inf for none).
    public static func block(input: UnsafePointer<Float>, channelStride: Int, channels: Int, tapOffsets: UnsafeBufferPointer<Int>,
                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>, rows: Int, bounds: ClosedRange<Float>,
                             residual: UnsafePointer<Float>?, strips: UnsafeBufferPointer<(source: Int, target: Int)>,
                             output: UnsafeMutablePointer<Float>, outputStride: Int) {
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        let blockFloats = channels &* tapOffsets.count &* blockChannels
        for strip in strips {
            for first in stride(from: 0, to: rows, by: blockChannels) {
                let offset = first &* outputStride &+ strip.target
                tile(input + strip.source, channelStride: channelStride, channels: channels, tapOffsets: tapOffsets,
                     weights: weights + first / blockChannels &* blockFloats, bias: bias + first, rows: min(blockChannels, rows &- first),
                     low: low, high: high, residual: residual.map { $0 + offset }, output: output + offset, outputStride: outputStride)
            }
        }
    }

    /// One block of 6 channels by one strip: `x` the strip's tap-0 input, `output` and `residual`
    /// its first channel's place.
    @inline(__always)
    private static func tile(_ x: UnsafePointer<Float>, channelStride: Int, channels: Int, tapOffsets: UnsafeBufferPointer<Int>,
                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>, rows: Int, low: Vector, high: Vector,
                             residual: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>, outputStride: Int) {
        let taps = tapOffsets.count
        var a0 = Vector(repeating: bias[0]), a1 = Vector(repeating: bias[1]), a2 = Vector(repeating: bias[2])
        var a3 = Vector(repeating: bias[3]), a4 = Vector(repeating: bias[4]), a5 = Vector(repeating: bias[5])
        var b0 = a0, b1 = a1, b2 = a2, b3 = a3, b4 = a4, b5 = a5
        var w = weights, x = x
        for _ in 0..<channels {
            for t in 0..<taps {
                let p = UnsafeRawPointer(x + tapOffsets[t])
                let x0 = p.loadUnaligned(as: Vector.self), x1 = p.loadUnaligned(fromByteOffset: 32, as: Vector.self)
                var s = Vector(repeating: w[0])
                a0 = multiplyAdd(a0, s, x0); b0 = multiplyAdd(b0, s, x1)
                s = Vector(repeating: w[1])
                a1 = multiplyAdd(a1, s, x0); b1 = multiplyAdd(b1, s, x1)
                s = Vector(repeating: w[2])
                a2 = multiplyAdd(a2, s, x0); b2 = multiplyAdd(b2, s, x1)
                s = Vector(repeating: w[3])
                a3 = multiplyAdd(a3, s, x0); b3 = multiplyAdd(b3, s, x1)
                s = Vector(repeating: w[4])
                a4 = multiplyAdd(a4, s, x0); b4 = multiplyAdd(b4, s, x1)
                s = Vector(repeating: w[5])
                a5 = multiplyAdd(a5, s, x0); b5 = multiplyAdd(b5, s, x1)
                w += blockChannels
            }
            x += channelStride
        }
        let finish = { (first: Vector, second: Vector, row: Int) in
            let offset = row &* outputStride
            store(first, second, at: output + offset, adding: residual.map { $0 + offset }, low: low, high: high)
        }
        finish(a0, b0, 0)
        if rows > 1 { finish(a1, b1, 1) }
        if rows > 2 { finish(a2, b2, 2) }
        if rows > 3 { finish(a3, b3, 3) }
        if rows > 4 { finish(a4, b4, 4) }
        if rows > 5 { finish(a5, b5, 5) }
    }

    /// Stores 16 finished sums at `target`, plus the 16 values at `other` if given, clamped.
    @inline(__always)
    private static func store(_ first: Vector, _ second: Vector, at target: UnsafeMutablePointer<Float>, adding other: UnsafePointer<Float>?,
                              low: Vector, high: Vector) {
        var (first, second) = (first, second)
        if let other {
            let source = UnsafeRawPointer(other)
            first += source.loadUnaligned(as: Vector.self)
            second += source.loadUnaligned(fromByteOffset: 32, as: Vector.self)
        }
        first.replace(with: low, where: first .< low)
        first.replace(with: high, where: first .> high)
        second.replace(with: low, where: second .< low)
        second.replace(with: high, where: second .> high)
        let raw = UnsafeMutableRawPointer(target)
        raw.storeBytes(of: first, as: Vector.self)
        raw.storeBytes(of: second, toByteOffset: 32, as: Vector.self)
    }
}
#endif
