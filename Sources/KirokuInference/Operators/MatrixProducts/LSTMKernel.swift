import COpenBLAS

/// ONNX's LSTM over a sequence, each direction and band of batch rows on a thread of its own
/// (rows and directions are independent; time is not). Per step, a band's rows [x_t, H_{t-1}]
/// (side by side in one buffer, H written there as it is computed) times [Wᵀ; Rᵀ] plus both
/// biases give the gates [rows, 4H] (ONNX's order: input, output, forget, cell) in one product:
/// on panels packed at load where the build has them, else sgemm. Then i = f(gates_i + P_i ⊙
/// C_{t-1}), f likewise (or 1 − i with input_forget), c = g(gates_c), C_t = f ⊙ C_{t-1} + i ⊙ c,
/// o = f(gates_o + P_o ⊙ C_t), H_t = o ⊙ h(C_t); with a clip, each gate's sum is clamped to ±clip
/// before its activation.
struct LSTMKernel: Kernel {
    /// [Wᵀ; Rᵀ] ([I + H, 4H]): PackedProduct's panels and its loop, or row-major [4H, I + H] (W | R) for sgemm.
    enum Weights {
        case panels(UnsafePointer<Float>, KernelLoops.PackedMultiply)
        case rows(UnsafePointer<Float>)
    }

    /// One direction's weights, stored at load, the two biases' sum [4H] and peepholes [3H] (i, o, f).
    struct Direction {
        let reverse: Bool
        let weights: Weights, bias: UnsafePointer<Float>
        let peepholes: UnsafePointer<Float>?
        /// f, g and h of the equations.
        let gate: Activation, cell: Activation, output: Activation
    }

    let steps: Int, batch: Int, inputSize: Int, hidden: Int
    /// X [steps, batch, I], Y [steps, directions, batch, H], Y_h and Y_c (and the initial states) [directions, batch, H].
    let directions: [Direction]
    let clip: Float?
    let inputForget: Bool
    /// Which inputs of the step hold initial_h and initial_c; nil: zeros.
    let initialHidden: Int?, initialCell: Int?
    var multiplyAdds: Int { directions.count * steps * batch * 4 * hidden * (inputSize + hidden) }
    var variant: String? { if case .panels = directions.first?.weights { "packed panels" } else { nil } }

    /// The bands each direction's rows are cut into: the threads shared out over the directions.
    private func bands(threads: Int) -> Int { min(batch, max(1, threads / directions.count)) }

    /// Floats a band's scratch takes for `rows`: the gates, [x_t, H], C and h(C).
    private func bandScratch(rows: Int) -> Int { rows * (4 * hidden + inputSize + 3 * hidden) }

    func scratchCount(threads: Int) -> Int {
        threads * bandScratch(rows: (batch + bands(threads: threads) - 1) / bands(threads: threads))
    }

    func run(_ context: KernelContext) {
        let bandCount = bands(threads: context.threads), rowsPerBand = (batch + bandCount - 1) / bandCount
        context.team.parallelFor(directions.count * bandCount) { task, worker in
            let (d, first) = (task / bandCount, task % bandCount * rowsPerBand), rows = min(rowsPerBand, batch - first)
            guard rows > 0 else { return }
            runBand(context, direction: d, rows: first..<first + rows, scratch: context.scratch + worker * bandScratch(rows: rowsPerBand))
        }
    }

    private func runBand(_ context: KernelContext, direction d: Int, rows: Range<Int>, scratch: UnsafeMutablePointer<Float>) {
        let direction = directions[d], h4 = 4 * hidden, count = rows.count, width = inputSize + hidden
        let gates = scratch, joined = gates + count * h4, cells = joined + count * width, squashed = cells + count * hidden
        let states = rows.lowerBound + d * batch  // the band's first row in Y_h, Y_c and the initial states
        for offset in 0..<count {
            let state = joined + offset * width + inputSize, cell = cells + offset * hidden, source = (states + offset) * hidden
            if let index = initialHidden { state.update(from: context.inputs[index] + source, count: hidden) } else { state.update(repeating: 0, count: hidden) }
            if let index = initialCell { cell.update(from: context.inputs[index] + source, count: hidden) } else { cell.update(repeating: 0, count: hidden) }
        }
        let x = context.inputs[0], y = context.outputs[0]
        for step in 0..<steps {
            let t = direction.reverse ? steps - 1 - step : step
            for offset in 0..<count {
                (joined + offset * width).update(from: x + (t * batch + rows.lowerBound + offset) * inputSize, count: inputSize)
            }
            switch direction.weights {
            case .panels(let packed, let multiply):
                multiply(joined, width, width, packed, h4, 0..<count, 0..<(h4 + MatMulKernel.panelColumns - 1) / MatMulKernel.panelColumns,
                         direction.bias, -.infinity ... .infinity, gates, h4)
            case .rows(let matrix):
                for offset in 0..<count { (gates + offset * h4).update(from: direction.bias, count: h4) }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(count), Int32(h4), Int32(width), 1, joined, Int32(width),
                            matrix, Int32(width), 1, gates, Int32(h4))
            }
            for offset in 0..<count {
                let h = joined + offset * width + inputSize
                update(gates + offset * h4, hidden: h, cell: cells + offset * hidden, squashed: squashed + offset * hidden, direction, context.loops)
                (y + ((t * directions.count + d) * batch + rows.lowerBound + offset) * hidden).update(from: h, count: hidden)
            }
        }
        for offset in 0..<count {
            (context.outputs[1] + (states + offset) * hidden).update(from: joined + offset * width + inputSize, count: hidden)
            (context.outputs[2] + (states + offset) * hidden).update(from: cells + offset * hidden, count: hidden)
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
