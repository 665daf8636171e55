/// Col2Im: columns [N, C·KH·KW, L] summed into images [N, C, H, W], the inverse of im2col (PyTorch's
/// Fold; VOLO's outlook attention). Column l is the block at output position (l / W', l % W') of
/// the window; value (c, kh, kw) of it is added at row oh·sh − top + kh·dh, column
/// ow·sw − left + kw·dw where that is inside the image. Each image and channel on one thread.
struct ColumnsToImageKernel: Kernel {
    let batch: Int, channels: Int
    let window: Window2D

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0], window = window
        let (height, width) = window.input, (kernelH, kernelW) = window.kernel, (outH, outW) = window.output
        let blocks = outH * outW
        context.team.parallelFor(batch * channels) { plane in
            let target = y + plane * height * width
            target.update(repeating: 0, count: height * width)
            for kh in 0..<kernelH {
                for kw in 0..<kernelW {
                    let source = x + ((plane * kernelH + kh) * kernelW + kw) * blocks
                    let column = kw * window.dilation.w - window.pads.left
                    // The block columns whose image column is inside: ow·sw + column in 0..<width.
                    let first = column >= 0 ? 0 : (-column + window.stride.w - 1) / window.stride.w
                    let end = width - column <= 0 ? 0 : min(outW, (width - column - 1) / window.stride.w + 1)
                    guard first < end else { continue }
                    for oh in 0..<outH {
                        let row = oh * window.stride.h - window.pads.top + kh * window.dilation.h
                        guard row >= 0 && row < height else { continue }
                        let line = target + row * width + column, values = source + oh * outW
                        for ow in first..<end { line[ow * window.stride.w] += values[ow] }
                    }
                }
            }
        }
    }
}
