import COpenBLAS

/// A model compiled for one input shape, with every buffer allocated once: create it once per
/// model and reuse it for every call (opening a session per call is the cost the seed measured
/// at 5x). Not for concurrent use: give each thread its own session, or serialise calls.
public final class InferenceSession {
    /// The model's name.
    public let modelName: String
    /// The input shapes this session runs (batch first), in the model's input order.
    public let inputShapes: [[Int]]
    /// The first input's shape.
    public var inputShape: [Int] { inputShapes[0] }
    /// The output shapes, in the model's output order.
    public let outputShapes: [[Int]]
    /// The threads kernels split their work across; OpenBLAS runs single-threaded inside each
    /// piece, so the two never oversubscribe the cores.
    public let threads: Int
    /// The build of the innermost loops it runs.
    public let kernels: KernelSet
    /// Multiply-adds per run, over every convolution and matrix product.
    public let multiplyAdds: Int
    /// Those of them done on 8-bit levels (a QDQ model's integer convolutions and matrix products).
    public let integerMultiplyAdds: Int
    /// The compiled steps, in execution order: what the optimizer left and what each step chose.
    public let steps: [StepDescription]
    /// How much of an int8 model runs on integer kernels, and how that was chosen.
    public let integerLayers: IntegerLayers
    /// The quantized layers on integer kernels, by node name.
    let integerLayerNames: [String]
    /// The build of the integer loops.
    let integerKernels: KernelSet
    /// Floats in one activation arena after buffer reuse (an arena per image run side by side),
    /// and before it (one buffer per value).
    public let arenaFloats: Int, unplannedFloats: Int

    private let team: ThreadTeam
    /// The compiled steps with their buffers: one lane, or one per thread when a batch's images
    /// run side by side.
    private let lanes: [Lane]
    private let constants: [UnsafeMutableBufferPointer<Float>]
    /// The batch's inputs and outputs (the arena's own, or `staging` when run image by image).
    private let inputs: [UnsafeMutablePointer<Float>]
    private let outputs: [UnsafeMutablePointer<Float>]
    /// Images run one at a time through the compiled steps (1: the whole batch at once).
    let images: Int
    /// Images that run at once, each on its own thread.
    var imagesAtOnce: Int { lanes.count }
    private let staging: [UnsafeMutableBufferPointer<Float>]

    private struct ResolvedStep {
        let kernel: any Kernel
        let inputs: [UnsafePointer<Float>]
        let outputs: [UnsafeMutablePointer<Float>]
    }

    /// The steps resolved into one arena, the scratch they share and the team their loops split
    /// across; the inputs and outputs of one run (one image when run image by image) in the arena.
    private struct Lane {
        let arena: UnsafeMutableBufferPointer<Float>
        let scratch: UnsafeMutableBufferPointer<Float>
        let steps: [ResolvedStep]
        let inputs: [UnsafeMutablePointer<Float>]
        let outputs: [UnsafeMutablePointer<Float>]
        let team: ThreadTeam
    }

    /// Compiles `model` for `batchSize` (used where the model's first input dimension is
    /// symbolic) on `threads` threads (default: the CPUs this process may use), with the `kernels`
    /// build of the innermost loops (default: the best this CPU runs) and, for an int8 model, its
    /// quantized layers on integer kernels as `integerLayers` says (default: whichever this CPU
    /// runs faster, measured now) with the `integerKernels` build of their loops (default: `kernels`),
    /// and its 3x3 convolutions by Winograd's F(4x4, 3x3) as `winograd` says (default: where that
    /// leaves the outputs as they are, probed now).
    public init(model: Model, batchSize: Int? = nil, threads: Int? = nil, kernels: KernelSet = .detected,
                integerLayers choice: IntegerLayerChoice = .measured, integerKernels: KernelSet? = nil,
                winograd: WinogradChoice = .probed) throws(InferenceError) {
        let shapes = try model.graph.inputs.map { graphInput throws(InferenceError) in
            try Self.shape(of: graphInput, model: model.name, batchSize: batchSize)
        }
        guard (batchSize ?? 1) >= 1 else { throw InferenceError(.invalidShape, "batch size must be at least 1") }
        let threads = threads ?? CPUBudget.available()
        let decided = try choice.floatLayers(model: model) { fixed throws(InferenceError) in
            // Timed with Winograd wherever it suits (no probe per plan timed).
            try InferenceSession(model: model, batchSize: batchSize, threads: threads, kernels: kernels, integerLayers: fixed,
                                 integerKernels: integerKernels, winograd: winograd == .never ? .never : .always)
        }

        var graph = model.graph
        GraphPasses.optimize(&graph, floatLayers: decided.floatLayers)
        var winogradOn = winograd != .never
        let compile = { (shapes: [[Int]], threads: Int) throws(InferenceError) -> (Compiler, inputs: [Int], outputs: [Int]) in
            let compiler = Compiler(modelName: model.name, opset: model.opset, kernels: kernels, integerKernels: integerKernels ?? kernels,
                                    threads: threads, winograd: winogradOn)
            let inputIDs = zip(model.graph.inputs, shapes).map { compiler.addInput($0.name, shape: $1) }
            return (compiler, inputIDs, try compiler.compile(graph))
        }
        var wholeBatch = try compile(shapes, threads)
        winogradOn = try winograd.enabled(planned: wholeBatch.0.steps.map(\.description)) { on throws(InferenceError) in
            try InferenceSession(model: model, batchSize: batchSize, threads: threads, kernels: kernels,
                                 integerLayers: .floatLayers(decided.floatLayers), integerKernels: integerKernels, winograd: on ? .always : .never)
        }
        if !winogradOn && winograd == .probed { wholeBatch = try compile(shapes, threads) }
        let (whole, wholeOutputs) = (wholeBatch.0, wholeBatch.outputs)
        // A batch runs image by image through one image's compilation where the model keeps its
        // images apart: each layer's output is then still in cache when the next reads it. When
        // the images share out evenly over the threads, they run side by side, each thread
        // through its own lane on one thread (no loop split across cores, no thread waiting at
        // the end of each step for another).
        let batch = shapes[0].first ?? 1
        let sideBySide = threads > 1 && batch % threads == 0
        var single: (Compiler, inputs: [Int], outputs: [Int])?
        if batch > 1, shapes.allSatisfy({ $0.first == batch }), !whole.mixesImages {
            single = try? compile(shapes.map { [1] + $0.dropFirst() }, sideBySide ? 1 : threads)
            if let one = single?.0, !Self.keepsImagesApart(whole: whole.runtimeShapes, single: one.runtimeShapes, batch: batch) { single = nil }
        }
        let (compiler, inputIDs, outputIDs) = single ?? wholeBatch
        images = single == nil ? 1 : batch

        let plan = MemoryPlan(steps: compiler.steps, shapes: compiler.valueShapes, inputs: inputIDs, outputs: outputIDs,
                              aliases: compiler.aliases)
        team = ThreadTeam(size: threads)
        let laneThreads = single != nil && sideBySide ? 1 : threads
        let scratchFloats = compiler.steps.map { $0.kernel.scratchCount(threads: laneThreads) }.max() ?? 0
        lanes = (0..<(threads / laneThreads)).map { [team] _ in
            let arena = HugePages.allocate(plan.arenaFloats), base = arena.baseAddress!
            let steps = compiler.steps.map { step in
                ResolvedStep(
                    kernel: step.kernel,
                    inputs: step.inputs.map { operand in
                        switch operand {
                        case .constant(let pointer): pointer
                        case .value(let id): UnsafePointer(base + plan.offsets[id])
                        }
                    },
                    outputs: step.outputs.map { base + plan.offsets[$0] })
            }
            return Lane(arena: arena, scratch: HugePages.allocate(scratchFloats), steps: steps,
                        inputs: inputIDs.map { base + plan.offsets[$0] }, outputs: outputIDs.map { base + plan.offsets[$0] },
                        team: laneThreads == threads ? team : ThreadTeam(size: 1))
        }
        constants = compiler.takeStorage()
        outputShapes = wholeOutputs.map { whole.valueShapes[$0] }
        // Image by image, the batch's inputs and outputs have buffers of their own.
        staging = images == 1 ? [] : (shapes + outputShapes).map { HugePages.allocate(ShapeMath.count($0) ?? 0) }
        inputs = images == 1 ? lanes[0].inputs : staging[..<shapes.count].map { $0.baseAddress! }
        outputs = images == 1 ? lanes[0].outputs : staging[shapes.count...].map { $0.baseAddress! }
        multiplyAdds = compiler.steps.map(\.kernel.multiplyAdds).reduce(0, +) * images
        integerMultiplyAdds = compiler.steps.compactMap { $0.kernel as? IntegerConvolutionKernel }.map(\.multiplyAdds).reduce(0, +) * images
        integerLayerNames = compiler.steps.filter { [IROperator.integerConvolution, IROperator.integerAdd].contains($0.description.operators.first) }
            .compactMap(\.description.layer)
        self.integerLayers = IntegerLayers(integer: integerLayerNames.count, quantized: integerLayerNames.count + decided.floatLayers.count,
                                           multiplyAddShare: multiplyAdds > 0 ? Double(integerMultiplyAdds) / Double(multiplyAdds) : 0,
                                           floatLayers: decided.floatLayers.sorted(), chosenBy: decided.chosenBy, timing: decided.timing)
        self.integerKernels = integerKernels ?? kernels
        modelName = model.name
        steps = compiler.steps.map(\.description)
        inputShapes = shapes
        arenaFloats = plan.arenaFloats
        unplannedFloats = plan.unplannedFloats
        self.threads = threads
        self.kernels = kernels
        openblas_set_num_threads(1)  // kernels split work across `threads` themselves
    }

    /// The concrete shape of a graph input: a symbolic first dimension is the batch size.
    private static func shape(of graphInput: GraphInput, model: String, batchSize: Int?) throws(InferenceError) -> [Int] {
        let shape = try graphInput.dimensions.enumerated().map { axis, dimension throws(InferenceError) -> Int in
            switch (dimension, axis) {
            case (let size?, 0):
                if let batchSize, batchSize != size {
                    throw InferenceError(.invalidShape, "model \(model) has a fixed batch of \(size); batch size \(batchSize) was asked for")
                }
                return size
            case (let size?, _): return size
            case (nil, 0): return batchSize ?? 1
            case (nil, _):
                throw InferenceError(.unsupported, "input '\(graphInput.name)' of model \(model) has a symbolic dimension \(axis); only the batch may be symbolic")
            }
        }
        guard ShapeMath.count(shape) != nil else {
            throw InferenceError(.invalidShape, "input '\(graphInput.name)' of model \(model) would be \(shape): too large")
        }
        return shape
    }

    /// Whether every run-time value of the batch's compilation is the single image's with the
    /// batch in front, so no step reads across images (with `Compiler.mixesImages` false). Values
    /// are matched by name: one image's compilation may have more of its own (merged siblings).
    static func keepsImagesApart(whole: [String: [Int]], single: [String: [Int]], batch: Int) -> Bool {
        whole.allSatisfy { name, shape in
            guard let one = single[name] else { return false }
            return shape.first == batch && one.first == 1 && shape.dropFirst().elementsEqual(one.dropFirst())
        }
    }

    deinit {
        staging.forEach(HugePages.deallocate)
        for lane in lanes {
            HugePages.deallocate(lane.arena)
            HugePages.deallocate(lane.scratch)
        }
        constants.forEach(HugePages.deallocate)
    }

    /// Runs the model on its inputs (of `inputShapes`); returns the outputs.
    public func run(_ tensors: [Tensor]) throws(InferenceError) -> [Tensor] {
        guard tensors.map(\.shape) == inputShapes else {
            throw InferenceError(.invalidShape, "model \(modelName) takes inputs \(inputShapes); got \(tensors.map(\.shape))")
        }
        for (tensor, pointer) in zip(tensors, inputs) {
            tensor.data.withUnsafeBufferPointer { pointer.update(from: $0.baseAddress!, count: $0.count) }
        }
        execute()
        return zip(outputs, outputShapes).map { pointer, shape in
            Tensor(shape: shape, data: Array(UnsafeBufferPointer(start: pointer, count: shape.reduce(1, *))))
        }
    }

    /// Runs a single-input model; returns the outputs.
    public func run(_ tensor: Tensor) throws(InferenceError) -> [Tensor] {
        try run([tensor])
    }

    /// Runs the model with the caller writing the input in place (no copy): `fill` receives the
    /// input buffer of `inputShape`, `read` the first output.
    public func run<R>(fill: (UnsafeMutableBufferPointer<Float>) throws -> Void,
                       read: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try fill(UnsafeMutableBufferPointer(start: inputs[0], count: inputShape.reduce(1, *)))
        execute()
        return try read(UnsafeBufferPointer(start: outputs[0], count: outputShapes[0].reduce(1, *)))
    }

    /// Runs the model `runs` times on its current input and returns the mean milliseconds each
    /// step took, in execution order: where the time goes (with images side by side, the first
    /// thread's steps: its share of the batch).
    public func profile(runs: Int) -> [(label: String, milliseconds: Double)] {
        zip(steps, stepMilliseconds(runs: runs)).map { ($0.label, $1) }
    }

    /// Mean milliseconds per step over `runs` runs.
    private func stepMilliseconds(runs: Int) -> [Double] {
        var totals = [Double](repeating: 0, count: steps.count)
        for _ in 0..<max(runs, 1) {
            execute { lane, index, step in
                guard lane == 0 else { return run(step, in: lanes[lane]) }
                let start = ContinuousClock.now
                run(step, in: lanes[lane])
                totals[index] += Self.milliseconds(since: start)
            }
        }
        return totals.map { $0 / Double(max(runs, 1)) }
    }

    /// Mean milliseconds per run of each node's step (a layer's step is named for its first node).
    func layerMilliseconds(runs: Int) -> [String: Double] {
        var times: [String: Double] = [:]
        for (step, milliseconds) in zip(steps, stepMilliseconds(runs: runs)) {
            if let layer = step.layer { times[layer, default: 0] += milliseconds }
        }
        return times
    }

    /// Each session's median milliseconds per run (the whole batch) over `rounds` rounds of `runs`
    /// runs, after one warm-up run each, the sessions alternated within each round so that the
    /// host's noise falls on all alike. What runs is whatever the inputs hold: speed does not
    /// depend on the values.
    public static func alternatedMilliseconds(_ sessions: [InferenceSession], rounds: Int, runs: Int) -> [Double] {
        for session in sessions { _ = session.timedRun() }
        var samples = [[Double]](repeating: [], count: sessions.count)
        for _ in 0..<max(rounds, 1) {
            for (index, session) in sessions.enumerated() {
                samples[index] += (0..<max(runs, 1)).map { _ in session.timedRun() }
            }
        }
        return samples.map { $0.sorted()[$0.count / 2] }
    }

    /// Milliseconds of one run on whatever the inputs hold.
    func timedRun() -> Double {
        let start = ContinuousClock.now
        execute()
        return Self.milliseconds(since: start)
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let (seconds, attoseconds) = start.duration(to: .now).components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    private func execute() {
        execute { lane, _, step in run(step, in: lanes[lane]) }
    }

    /// The steps, once per image when run image by image (its inputs copied in from the batch's,
    /// its outputs out to them), the images shared among the lanes; `body` gets the lane, the
    /// step's index and the step.
    private func execute(_ body: (Int, Int, ResolvedStep) -> Void) {
        guard images > 1 else { return lanes[0].steps.enumerated().forEach { body(0, $0, $1) } }
        let inputCounts = inputShapes.map { $0.reduce(1, *) / images }, outputCounts = outputShapes.map { $0.reduce(1, *) / images }
        func runImage(_ image: Int, _ index: Int) {
            let lane = lanes[index]
            for (n, count) in inputCounts.enumerated() { lane.inputs[n].update(from: inputs[n] + image * count, count: count) }
            lane.steps.enumerated().forEach { body(index, $0, $1) }
            for (n, count) in outputCounts.enumerated() { (outputs[n] + image * count).update(from: lane.outputs[n], count: count) }
        }
        guard lanes.count > 1 else { return (0..<images).forEach { runImage($0, 0) } }
        team.parallelFor(images) { image, worker in runImage(image, worker) }
    }

    private func run(_ step: ResolvedStep, in lane: Lane) {
        step.kernel.run(KernelContext(inputs: step.inputs, outputs: step.outputs, scratch: lane.scratch.baseAddress!, team: lane.team,
                                      kernels: kernels, integerKernels: integerKernels))
    }
}

