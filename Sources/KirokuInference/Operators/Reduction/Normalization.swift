/// LayerNormalization over a run of neighbouring axes: the input as [outer, length, inner], each
/// of the outer × inner groups of `length` values (spaced `inner` apart) scaled to zero mean and
/// unit variance, then multiplied by `scale` and shifted by `bias` (one value per position along
/// the normalised axes, or one in all). ONNX's operator normalises the trailing axes (inner 1);
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
        let x = context.inputs[0], y = context.outputs[0], count = Float(length)
        func affine(_ value: Float, _ index: Int) -> Float {
            let scaled = value * scale[scale.count == 1 ? 0 : index]
            return bias.map { scaled + $0[$0.count == 1 ? 0 : index] } ?? scaled
        }
        if inner == 1 {
            let runs = length / scaleRun
            context.team.parallelFor(outer) { row in
                let input = x + row * length, output = y + row * length
                var sum: Float = 0
                for i in 0..<length { sum += input[i] }
                let mean = sum / count
                var squares: Float = 0
                for i in 0..<length { squares += (input[i] - mean) * (input[i] - mean) }
                let inverse = 1 / (squares / count + epsilon).squareRoot()
                if rowsPerImage == 1 && scaleRun == 1 {
                    for i in 0..<length { output[i] = affine((input[i] - mean) * inverse, i) }
                    return
                }
                let first = row % rowsPerImage * runs
                for run in 0..<runs {
                    for i in (run * scaleRun)..<((run + 1) * scaleRun) { output[i] = affine((input[i] - mean) * inverse, first + run) }
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
