/// MaxPool on levels (IROperator.integerMaxPool): positions by channels in and out, each image's
/// output rows shared out in bands over the threads.
struct IntegerMaxPoolKernel: Kernel {
    let batch: Int, channels: Int
    let window: Window2D
    /// How the largest input level becomes an output level, where the scales differ.
    let requantization: Scaling?
    /// Input levels read as (level + shift) · scale, requantized by dividing by `divisor` (the output's scale).
    typealias Scaling = (scale: Float, shift: Float, divisor: Float)
    /// The output's levels (a window with no tap inside the input takes the lowest, unscaled: a float -inf, quantized).
    let bounds: ClosedRange<Int32>

    var variant: String? { "int8 \(window.kernel.h)x\(window.kernel.w)/\(window.stride.h)" }

    func run(_ context: KernelContext) {
        let loops = context.integerKernels.integer
        let input = UnsafeRawPointer(context.inputs[0]).assumingMemoryBound(to: Int16.self)
        let output = UnsafeMutableRawPointer(context.outputs[0]).assumingMemoryBound(to: Int16.self)
        let (inputPlane, outputPlane, outHeight) = (window.input.h * window.input.w, window.output.h * window.output.w, window.output.h)
        for n in 0..<batch {
            let (x, y) = (input + n * inputPlane * channels, output + n * outputPlane * channels)
            let bands = min(outHeight, 4 * context.threads)
            context.team.parallelFor(bands) { band in
                loops.maxPool(band * outHeight / bands..<(band + 1) * outHeight / bands, x, (window.input, window.output), channels,
                              (window.kernel, window.stride, window.dilation), (window.pads.top, window.pads.left), requantization, bounds, y)
            }
        }
    }
}
