/// LayerNormalization over a run of neighbouring axes: the input as [outer, length, inner], each
/// of the outer × inner groups of `length` values (spaced `inner` apart) scaled to zero mean and
/// unit variance, then multiplied by `scale` and shifted by `bias` (one value per position along
/// the normalised axes). ONNX's operator normalises the trailing axes (inner 1);
/// a LayerNorm over the channels of an NCHW value (ConvNeXt's, once its Transposes are pushed
/// away) has the plane inside, and runs along it a chunk of positions at a time.
/// InstanceNormalization and GroupNormalization are the same over rows of whole channels (a row
/// per image and channel or group), with a scale and bias per channel: `scaleRun` positions of a
/// row share one value, and row r starts at channel (r mod `rowsPerImage`) · length / scaleRun.
struct LayerNormKernel: Kernel {
    let outer: Int
    let length: Int
    let inner: Int
    let epsilon: Float
    let scale: [Float]
    let bias: [Float]?
    /// Positions of a row that share one scale and bias value (1: one per position).
    var scaleRun = 1
    /// Rows per image whose scale and bias values follow one another (1: every row the same).
    var rowsPerImage = 1

    /// Positions of the plane a chunk holds.
    static let chunk = 256

    func scratchCount(threads: Int) -> Int { inner == 1 ? 0 : 2 * Self.chunk * threads }

    func run(_ context: KernelContext) {
        guard outer * length * inner > 0 else { return }
        let x = context.inputs[0], y = context.outputs[0], count = Float(length)
        func affine(_ value: Float, _ index: Int) -> Float {
            let scaled = value * scale[index]
            return bias.map { scaled + $0[index] } ?? scaled
        }
        if inner == 1 && scaleRun == 1 && rowsPerImage == 1 {
            // LayerNormalization over trailing axes: a scale (and bias) value per position.
            scale.withUnsafeBufferPointer { scale in
                (bias ?? []).withUnsafeBufferPointer { bias in
                    // An empty array's buffer may still have an address: no bias is nil.
                    let (scale, bias) = (scale.baseAddress!, bias.isEmpty ? nil : bias.baseAddress)
                    context.team.parallelFor(outer) { row in
                        let input = x + row * length, output = y + row * length
                        let (mean, inverse) = context.loops.moments(input, length, epsilon)
                        context.loops.normalize(input, output, length, mean, inverse, scale, bias)
                    }
                }
            }
            return
        }
        if inner == 1 {
            // Rows of whole channels, `scaleRun` positions sharing a scale and bias value.
            let runs = length / scaleRun
            context.team.parallelFor(outer) { row in
                let input = x + row * length, output = y + row * length
                let (mean, inverse) = context.loops.moments(input, length, epsilon)
                let first = row % rowsPerImage * runs
                for run in 0..<runs {
                    let factor = inverse * scale[first + run], offset = (bias?[first + run] ?? 0) - mean * factor
                    for i in (run * scaleRun)..<((run + 1) * scaleRun) { output[i] = input[i] * factor + offset }
                }
            }
            return
        }
        let pieces = (inner + Self.chunk - 1) / Self.chunk
        context.team.parallelFor(outer * pieces) { index, worker in
            let o = index / pieces, start = index % pieces * Self.chunk, width = min(Self.chunk, inner - start)
            let mean = context.scratch + worker * 2 * Self.chunk, inverse = mean + Self.chunk
            let base = o * length * inner + start
            mean.update(repeating: 0, count: width)
            inverse.update(repeating: 0, count: width)
            for r in 0..<length {
                let row = x + base + r * inner
                for i in 0..<width { mean[i] += row[i] }
            }
            for i in 0..<width { mean[i] /= count }
            for r in 0..<length {
                let row = x + base + r * inner
                for i in 0..<width { inverse[i] += (row[i] - mean[i]) * (row[i] - mean[i]) }
            }
            for i in 0..<width { inverse[i] = 1 / (inverse[i] / count + epsilon).squareRoot() }
            for r in 0..<length {
                let row = x + base + r * inner, output = y + base + r * inner
                for i in 0..<width { output[i] = affine((row[i] - mean[i]) * inverse[i], r) }
            }
        }
    }
}
