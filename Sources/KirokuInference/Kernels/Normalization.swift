/// LayerNormalization: each row (the axes from `axis` on) scaled to zero mean and unit variance,
/// then multiplied by `scale` and shifted by `bias` (both along the row, or one value).
struct LayerNormKernel: Kernel {
    let rows: Int
    let rowLength: Int
    let epsilon: Float
    let scale: [Float]
    let bias: [Float]?

    /// Rows are shared out over the threads; mean and variance in two passes over each row.
    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0], length = Float(rowLength)
        context.team.parallelFor(rows) { row in
            let input = x + row * rowLength, output = y + row * rowLength
            var sum: Float = 0
            for i in 0..<rowLength { sum += input[i] }
            let mean = sum / length
            var squares: Float = 0
            for i in 0..<rowLength { squares += (input[i] - mean) * (input[i] - mean) }
            let inverse = 1 / (squares / length + epsilon).squareRoot()
            for i in 0..<rowLength {
                let normalized = (input[i] - mean) * inverse * scale[scale.count == 1 ? 0 : i]
                output[i] = bias.map { normalized + $0[$0.count == 1 ? 0 : i] } ?? normalized
            }
        }
    }
}
