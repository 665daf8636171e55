import COpenBLAS

/// ONNX's LSTM over a sequence, each direction and band of batch rows on a thread of its own
/// (rows and directions are independent; time is not). Per step, a band's gates [rows, 4H]
/// (ONNX's order: input, output, forget, cell) start from the two biases' sum, take X_t·Wᵀ and
/// H_{t-1}·Rᵀ by sgemm, then: i = f(gates_i + P_i ⊙ C_{t-1}), f likewise (or 1 − i with
/// input_forget), c = g(gates_c), C_t = f ⊙ C_{t-1} + i ⊙ c, o = f(gates_o + P_o ⊙ C_t),
/// H_t = o ⊙ h(C_t); with a clip, each gate's sum is clamped to ±clip before its activation.
struct LSTMKernel: Kernel {
    /// One direction's weights, stored at load: W [4H, I], R [4H, H], bias Wb + Rb [4H], peepholes [3H] (i, o, f).
    struct Direction {
        let reverse: Bool
        let input: UnsafePointer<Float>, recurrent: UnsafePointer<Float>, bias: UnsafePointer<Float>
        let peepholes: UnsafePointer<Float>?
        /// f, g and h of the equations.
        let gate: Activation, cell: Activation, output: Activation
    }

    let steps: Int, batch: Int, inputSize: Int, hidden: Int
    /// X [steps, batch, I], Y [steps, directions, batch, H], Y_h and Y_c (and the initial states) [directions, batch, H].
    let directions: [Direction]
    let clip: Float?
    let inputForget: Bool
    /// Which inputs of the step hold initial_h and initial_c (laid out as Y_h); nil: zeros.
    let initialHidden: Int?, initialCell: Int?
    var multiplyAdds: Int { directions.count * steps * batch * 4 * hidden * (inputSize + hidden) }

    /// The bands each direction's rows are cut into: the threads shared out over the directions.
    private func bands(threads: Int) -> Int { min(batch, max(1, threads / directions.count)) }

    /// Gates, hidden and cell state and h(C) for the rows of one band, per thread.
    func scratchCount(threads: Int) -> Int {
        let rows = (batch + bands(threads: threads) - 1) / bands(threads: threads)
        return threads * rows * 7 * hidden
    }

    func run(_ context: KernelContext) {
        let bandCount = bands(threads: context.threads), rowsPerBand = (batch + bandCount - 1) / bandCount
        context.team.parallelFor(directions.count * bandCount) { task, worker in
            let (d, first) = (task / bandCount, task % bandCount * rowsPerBand), rows = min(rowsPerBand, batch - first)
            guard rows > 0 else { return }
            runBand(context, direction: d, rows: first..<first + rows, scratch: context.scratch + worker * rowsPerBand * 7 * hidden)
        }
    }

    /// Offset of row `row` of direction `d` in Y_h, Y_c and the initial states.
    private func stateOffset(_ d: Int, _ row: Int) -> Int { (d * batch + row) * hidden }

    private func runBand(_ context: KernelContext, direction d: Int, rows: Range<Int>, scratch: UnsafeMutablePointer<Float>) {
        let direction = directions[d], h4 = 4 * hidden, count = rows.count
        let gates = scratch, state = gates + count * h4, cells = state + count * hidden, squashed = cells + count * hidden
        for (offset, row) in rows.enumerated() {
            let source = stateOffset(d, row)
            if let index = initialHidden { (state + offset * hidden).update(from: context.inputs[index] + source, count: hidden) }
            else { (state + offset * hidden).update(repeating: 0, count: hidden) }
            if let index = initialCell { (cells + offset * hidden).update(from: context.inputs[index] + source, count: hidden) }
            else { (cells + offset * hidden).update(repeating: 0, count: hidden) }
        }
        let x = context.inputs[0], y = context.outputs[0]
        for step in 0..<steps {
            let t = direction.reverse ? steps - 1 - step : step
            for offset in 0..<count { (gates + offset * h4).update(from: direction.bias, count: h4) }
            let xt = x + (t * batch + rows.lowerBound) * inputSize
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(count), Int32(h4), Int32(inputSize), 1, xt, Int32(inputSize),
                        direction.input, Int32(inputSize), 1, gates, Int32(h4))
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(count), Int32(h4), Int32(hidden), 1, state, Int32(hidden),
                        direction.recurrent, Int32(hidden), 1, gates, Int32(h4))
            for offset in 0..<count {
                let row = rows.lowerBound + offset
                let h = state + offset * hidden, c = cells + offset * hidden, tanhC = squashed + offset * hidden
                update(gates + offset * h4, hidden: h, cell: c, squashed: tanhC, direction, context.loops)
                (y + ((t * directions.count + d) * batch + row) * hidden).update(from: h, count: hidden)
            }
        }
        for (offset, row) in rows.enumerated() {
            (context.outputs[1] + stateOffset(d, row)).update(from: state + offset * hidden, count: hidden)
            (context.outputs[2] + stateOffset(d, row)).update(from: cells + offset * hidden, count: hidden)
        }
    }

    /// One row's step: its gate sums `g` [4H] to H_t and C_t, in place in `h` and `c`.
    private func update(_ g: UnsafeMutablePointer<Float>, hidden h: UnsafeMutablePointer<Float>, cell c: UnsafeMutablePointer<Float>,
                        squashed: UnsafeMutablePointer<Float>, _ direction: Direction, _ loops: KernelLoops) {
        let n = hidden, (input, output, forget, candidate) = (g, g + n, g + 2 * n, g + 3 * n)
        func activate(_ values: UnsafeMutablePointer<Float>, _ activation: Activation) {
            if let clip { loops.clamp(values, n, -clip, clip) }
            activation.apply(UnsafeMutableBufferPointer(start: values, count: n), loops: loops)
        }
        if let p = direction.peepholes {
            for j in 0..<n { input[j] += p[j] * c[j]; forget[j] += p[2 * n + j] * c[j] }
        }
        activate(input, direction.gate)
        if inputForget { for j in 0..<n { forget[j] = 1 - input[j] } } else { activate(forget, direction.gate) }
        activate(candidate, direction.cell)
        for j in 0..<n { c[j] = forget[j] * c[j] + input[j] * candidate[j] }
        if let p = direction.peepholes { for j in 0..<n { output[j] += p[n + j] * c[j] } }
        activate(output, direction.gate)
        squashed.update(from: c, count: n)
        direction.output.apply(UnsafeMutableBufferPointer(start: squashed, count: n), loops: loops)
        for j in 0..<n { h[j] = output[j] * squashed[j] }
    }
}
