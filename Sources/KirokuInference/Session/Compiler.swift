import Foundation

/// A value while the graph is compiled: known at load (folded), or computed at run time.
enum CompiledValue {
    case constant(Constant)
    case runtime(id: Int, shape: [Int])

    var shape: [Int] {
        switch self {
        case .constant(let constant): constant.shape
        case .runtime(_, let shape): shape
        }
    }

    /// The value, where it is known at load.
    var constant: Constant? {
        if case .constant(let constant) = self { constant } else { nil }
    }
}

/// Where a kernel reads an input: a run-time value, or float data fixed at load.
enum Operand {
    case value(Int)
    case constant(UnsafePointer<Float>)
}

/// One kernel with its operands, in execution order.
struct Step {
    let description: StepDescription
    let kernel: any Kernel
    let inputs: [Operand]
    let outputs: [Int]
}

/// Turns an optimized graph with fixed input shapes into steps: constant subgraphs (weights,
/// converters' Shape → Gather → Concat → Reshape chains) are evaluated here, by the same kernels
/// that run at run time.
final class Compiler {
    let modelName: String
    let opset: Int
    private(set) var steps: [Step] = []
    private(set) var valueShapes: [[Int]] = []
    /// Values that are part of another, by id: its id and where in it they start (floats).
    private(set) var aliases: [Int: (base: Int, offset: Int)] = [:]
    private var values: [String: CompiledValue] = [:]
    /// How many nodes (and graph outputs) read each value.
    private var readers: [String: Int] = [:]
    /// The nodes that read each value.
    private var readerNodes: [String: [Node]] = [:]
    /// Zero padding of the spatial axes that a Conv reading it takes into its own pads: the
    /// padded value's name, the Pad node and its input (the Pad runs only if something else reads it).
    private var deferredPads: [String: (node: Node, input: CompiledValue, pads: [Int])] = [:]
    /// Float data that kernels point at (weights, folded constants), freed with the session: chunks
    /// of whole 2 MB huge pages, each twice the last up to 16 MB, filled front to back.
    private(set) var storage: [UnsafeMutableBufferPointer<Float>] = []
    private var chunkUsed = 0
    /// The graph inputs' value ids: the caller fills them, no step computes them.
    private var graphInputs = Set<Int>()
    /// Values laid out in channel blocks (NCHW8c) rather than NCHW, and each moved value's copy in
    /// the other layout (see laidOut).
    private var blockedValues = Set<Int>()
    private var otherLayout: [Int: Int] = [:]

    /// The build of the innermost loops the session runs: some kernels lay out weights for it.
    let kernels: KernelSet
    /// The build of its integer loops (the 8-bit products lay out weights as bytes for VNNI).
    let integerKernels: KernelSet
    /// The threads the session runs on: some kernels cut their work into a multiple of them.
    let threads: Int
    /// Whether 3x3 stride-1 convolutions between channel blocks may run by Winograd's F(4x4, 3x3).
    let winograd: Bool
    /// Whether a step combines values across the batch while keeping its shape (Softmax over axis
    /// 0): such a model cannot run image by image.
    var mixesImages = false

    init(modelName: String, opset: Int, kernels: KernelSet, integerKernels: KernelSet, threads: Int, winograd: Bool = true) {
        self.winograd = winograd
        self.modelName = modelName
        self.opset = opset
        self.kernels = kernels
        self.integerKernels = integerKernels
        self.threads = threads
    }

    deinit {
        // Ownership of `storage` moves to the session through `takeStorage()`; anything left is ours.
        storage.forEach(HugePages.deallocate)
    }

    /// Hands the constant storage to the caller, which must deallocate it.
    func takeStorage() -> [UnsafeMutableBufferPointer<Float>] {
        defer { storage = [] }
        return storage
    }

    /// Declares a run-time graph input; returns its value id.
    func addInput(_ name: String, shape: [Int]) -> Int {
        let id = newValue(name, shape: shape)
        graphInputs.insert(id)
        return id
    }

    /// Compiles every node; returns the value ids of the graph outputs.
    func compile(_ graph: Graph) throws(InferenceError) -> [Int] {
        readers = graph.readerCounts
        for node in graph.nodes { for input in Set(node.inputs) where !input.isEmpty { readerNodes[input, default: []].append(node) } }
        for (name, constant) in graph.constants where values[name] == nil { values[name] = .constant(constant) }
        // A group of siblings compiles at its first member (the others read the same input, defined by then).
        let siblings = ConvolutionGroups.pointwiseSiblings(graph)
        var graph = graph
        if kernels.loops.channelBlocks != nil {
            for index in ConvolutionGroups.channelBlockedChains(graph, siblings: siblings) {
                graph.nodes[index].attributes[IRAttribute.channelBlocked] = .int(1)
            }
        }
        let groupAt = Dictionary(uniqueKeysWithValues: siblings.map { ($0[0], $0) }), later = Set(siblings.flatMap { $0.dropFirst() })
        for (index, node) in graph.nodes.enumerated() where !later.contains(index) {
            let members = groupAt[index]?.map { graph.nodes[$0] } ?? [node]
            if members.count > 1, try compileSiblings(members) { continue }
            for member in members { try compile(member) }
        }
        return try graph.outputs.map { name throws(InferenceError) -> Int in
            switch values[name] {
            case .runtime(let id, _):
                guard case .value(let plain) = laidOut(.value(id), blocked: false) else { return id }
                return plain
            case .constant(let constant):
                // An output known at load: copy it out through a kernel like any other value.
                guard let tensor = constant.floatTensor else {
                    throw InferenceError(.unsupported, "output '\(name)' of model \(modelName) is an integer tensor")
                }
                let id = newValue(name, shape: tensor.shape)
                steps.append(Step(description: StepDescription(kind: .constantOutput, operators: [], nodes: [name], layout: .nchw),
                                  kernel: CopyKernel(count: tensor.count),
                                  inputs: [.constant(store(tensor))], outputs: [id]))
                return id
            case nil: throw InferenceError(.malformedModel, "model \(modelName) never computes its output '\(name)'")
            }
        }
    }

    // MARK: Values

    /// `operand` in the layout a step reads: channel-blocked (NCHW8c) or not. A computed value in
    /// the other layout is moved by a ChannelBlocksKernel step, inserted at `index` (default: next),
    /// once: later readers share the copy.
    private func laidOut(_ operand: Operand, blocked: Bool, insertingAt index: Int? = nil) -> Operand {
        guard case .value(let id) = operand, blockedValues.contains(id) != blocked, let loops = kernels.loops.channelBlocks else { return operand }
        if let copy = otherLayout[id] { return .value(copy) }
        let shape = valueShapes[id], copy = valueShapes.count
        valueShapes.append(shape)
        if blocked { blockedValues.insert(copy) }
        otherLayout[id] = copy
        let kernel = ChannelBlocksKernel(batch: shape[0], channels: shape[1], plane: shape[2...].reduce(1, *),
                                         direction: blocked ? .toBlocks : .toPlanes, loops: loops)
        let move = StepDescription(kind: blocked ? .toChannelBlocks : .fromChannelBlocks, operators: [], nodes: ["value \(id)"],
                                   layout: blocked ? .channelBlocks : .nchw)
        steps.insert(Step(description: move, kernel: kernel, inputs: [operand], outputs: [copy]),
                     at: index ?? steps.count)
        return .value(copy)
    }

    /// The shape of each value of the graph computed at run time, by name.
    var runtimeShapes: [String: [Int]] {
        values.compactMapValues { value in
            guard case .runtime(_, let shape) = value else { return nil }
            return shape
        }
    }

    private func newValue(_ name: String, shape: [Int]) -> Int {
        let id = valueShapes.count
        valueShapes.append(shape)
        values[name] = .runtime(id: id, shape: shape)
        return id
    }

    /// Copies float data into storage that lives as long as the session; returns its address
    /// (64-byte aligned).
    func store(_ tensor: Tensor) -> UnsafePointer<Float> {
        let floats = (max(tensor.count, 1) + 15) / 16 * 16
        if storage.isEmpty || chunkUsed + floats > storage[storage.count - 1].count {
            let next = min(2 * (storage.last?.count ?? 0), 4 * 1024 * 1024)
            storage.append(HugePages.allocate(max(next, floats)))
            chunkUsed = 0
        }
        let target = storage[storage.count - 1].baseAddress! + chunkUsed
        chunkUsed += floats
        tensor.data.withUnsafeBufferPointer { target.update(from: $0.baseAddress!, count: tensor.count) }
        return UnsafePointer(target)
    }

    /// Copies integer data (an integer kernel's packed weights) into the same storage.
    func store<Value: FixedWidthInteger>(_ values: [Value]) -> UnsafePointer<Value> {
        var words = Tensor(zeros: [(values.count * MemoryLayout<Value>.stride + 3) / 4])
        words.data.withUnsafeMutableBytes { bytes in values.withUnsafeBytes { bytes.copyMemory(from: $0) } }
        return UnsafeRawPointer(store(words)).assumingMemoryBound(to: Value.self)
    }

    func value(_ name: String, of node: Node) throws(InferenceError) -> CompiledValue {
        if values[name] == nil, let pad = deferredPads.removeValue(forKey: name) {
            try compileRuntime(pad.node, inputs: [pad.input])
        }
        guard let value = values[name] else {
            throw InferenceError(.malformedModel, "\(node.label) in model \(modelName) reads '\(name)', which nothing defines before it")
        }
        return value
    }

    func operand(_ value: CompiledValue, of node: Node) throws(InferenceError) -> Operand {
        switch value {
        case .runtime(let id, _): return .value(id)
        case .constant(let constant):
            guard let tensor = constant.floatTensor else {
                throw InferenceError(.unsupported, "\(node.label) in model \(modelName) takes an integer tensor as data")
            }
            return .constant(store(tensor))
        }
    }

    /// A constant input that the operator needs at load (axes, shapes, pads, bounds).
    func constantInput(_ node: Node, _ index: Int) throws(InferenceError) -> Constant? {
        guard let name = node.input(index) else { return nil }
        guard case .constant(let constant) = try value(name, of: node) else {
            throw InferenceError(.unsupported, "\(node.label) in model \(modelName): input \(index) ('\(name)') must be known at load, but is computed at run time")
        }
        return constant
    }

    func fail(_ node: Node, _ message: String) -> InferenceError {
        InferenceError(.unsupported, "\(node.label) in model \(modelName): \(message)")
    }

    func shapeError(_ node: Node, _ message: String) -> InferenceError {
        InferenceError(.invalidShape, "\(node.label) in model \(modelName): \(message)")
    }

    // MARK: Nodes

    private func compile(_ node: Node) throws(InferenceError) {
        if try mergePad(into: node) { return }
        let inputs = try node.inputs.map { name throws(InferenceError) -> CompiledValue? in
            name.isEmpty ? nil : try value(name, of: node)
        }
        // Whatever can be computed from what is known at load is computed now.
        if let folded = try ConstantFolding.fold(node, inputs: inputs, compiler: self) {
            for (name, constant) in zip(node.outputs, folded) { values[name] = .constant(constant) }
            return
        }
        if node.op == "Split" { return try compileSplit(node, inputs: inputs) }
        if try deferZeroPad(node, inputs: inputs) { return }
        try compileRuntime(node, inputs: inputs)
    }

    /// A Pad with zeros on the height and width of a 4-D run-time value, read only by
    /// convolutions with explicit pads: deferred, so that each takes it into its pads
    /// (PyTorch's exports pad separately before EfficientNet's convolutions).
    private func deferZeroPad(_ node: Node, inputs: [CompiledValue?]) throws(InferenceError) -> Bool {
        guard node.op == "Pad", node.string("mode", default: "constant") == "constant", case .runtime(_, let shape)? = inputs.first ?? nil,
              shape.count == 4, let reading = readerNodes[node.outputs[0]], reading.count == readers[node.outputs[0]],
              reading.allSatisfy({ $0.op == "Conv" && $0.inputs.first == node.outputs[0] && $0.string("auto_pad", default: "NOTSET") == "NOTSET" }),
              try padValue(node)?.floatTensor?.data.allSatisfy({ $0 == 0 }) ?? true else { return false }
        let map = try axisMap(node, input: shape)
        // Padding only: each axis reads its input in order, from some output index on.
        var pads: [Int] = []
        for (axis, sources) in map.sources.enumerated() {
            guard let begin = sources.firstIndex(where: { $0 >= 0 }) ?? (shape[axis] == 0 ? 0 : nil),
                  sources[begin...].prefix(shape[axis]).elementsEqual(0..<shape[axis]),
                  sources.dropFirst(begin + shape[axis]).allSatisfy({ $0 < 0 }) else { return false }
            pads.append(begin)
            pads.append(sources.count - begin - shape[axis])
        }
        guard pads[0...3].allSatisfy({ $0 == 0 }) else { return false }
        deferredPads[node.outputs[0]] = (node, inputs[0]!, [pads[4], pads[6], pads[5], pads[7]])
        return true
    }

    /// A Conv reading a deferred Pad compiles over the Pad's input with the pads added to its own.
    private func mergePad(into node: Node) throws(InferenceError) -> Bool {
        guard node.op == "Conv", let name = node.input(0), values[name] == nil, let pad = deferredPads[name],
              let source = pad.node.input(0) else { return false }
        var merged = node
        merged.inputs[0] = source
        merged.attributes["pads"] = .ints(zip(node.ints("pads") ?? [0, 0, 0, 0], pad.pads).map { $0 + $1 })
        merged.name = "\(pad.node.name) + \(node.name)"
        try compile(merged)
        return true
    }

    /// A Slice that reads one run of a value a step computes (whole channels of one image in
    /// NCHW: ShuffleNet's channel halves, two copies a block) is that part of it: an alias, no step.
    private func aliasContiguousSlice(_ node: Node, inputs: [CompiledValue?]) throws(InferenceError) -> Bool {
        guard case .runtime(let id, let shape)? = inputs.first ?? nil, !graphInputs.contains(id), !blockedValues.contains(id) else { return false }
        let map = try axisMap(node, input: shape)
        guard let offset = map.contiguousOffset else { return false }
        let output = newValue(node.outputs[0], shape: map.resultShape)
        aliases[output] = aliases[id].map { ($0.base, $0.offset + offset) } ?? (id, offset)
        return true
    }

    /// The operators whose output is their input's floats in the same order.
    static let reshapeOperators: Set<String> = ["Reshape", "Flatten", "Squeeze", "Unsqueeze"]

    private func compileRuntime(_ node: Node, inputs: [CompiledValue?]) throws(InferenceError) {
        if node.op == "Identity" || node.op == "Dropout" || (node.op == "Cast" && node.int("to", default: 1) == 1) {
            guard let source = inputs.first ?? nil else { throw shapeError(node, "has no input") }
            guard node.outputs.dropFirst().allSatisfy(\.isEmpty) else { throw fail(node, "only the first output is supported (a mask is not)") }
            if node.op == "Dropout", let training = node.input(2) {
                guard case .constant(let mode) = try value(training, of: node), mode.integers?.allSatisfy({ $0 == 0 }) == true else {
                    throw fail(node, "training mode is not supported (an inference engine runs Dropout as Identity)")
                }
            }
            values[node.outputs[0]] = source
            return
        }
        if try fuseResidualAdd(node, inputs: inputs) { return }
        if fuseActivationIntoLastStep(node, inputs: inputs) { return }
        if fuseShiftIntoLastAffine(node, inputs: inputs) { return }
        if node.op == "Slice", try aliasContiguousSlice(node, inputs: inputs) { return }
        let plan = try OperatorCompiler(compiler: self, node: node, inputs: inputs).kernel()
        if fuseChannelScaleIntoQuantize(node, plan) { return }
        guard ShapeMath.count(plan.outputShape) != nil else {
            throw shapeError(node, "the output \(plan.outputShape) is impossible or too large (over \(ShapeMath.maximumElements) elements)")
        }
        var kernel = plan.kernel
        // A copy to the same shape (an identity Slice, Pad, Expand or Tile; a Flatten of what is flat) is
        // its input, in the layout it has (GhostNet's slices of all of a Concat's channels on blocks).
        if kernel is CopyKernel, case .runtime(let id, plan.outputShape)? = plan.operands.first, !graphInputs.contains(id) {
            let output = newValue(node.outputs[0], shape: plan.outputShape)
            aliases[output] = aliases[id] ?? (id, 0)
            if blockedValues.contains(id) { blockedValues.insert(output) }
            return
        }
        let convolution = kernel as? ConvolutionKernel
        var readsBlocks = convolution?.readsChannelBlocks ?? false
        var writesBlocks = convolution?.writesChannelBlocks ?? false
        if kernel is ConcatKernel, concatenatesBlocks(node, plan.operands) { (readsBlocks, writesBlocks) = (true, true) }
        // A global pooling of channel blocks reads them as they are (its output is the same in both
        // layouts); a window pooling reads and writes them, and so do an activation (the same in
        // either layout), a per-channel scale (DenseNet's batch norm before each layer) and an
        // elementwise operator of two values of one shape both in blocks (StarNet's product of branches).
        if case .runtime(let id, let shape)? = plan.operands.first, blockedValues.contains(id) {
            if let pool = kernel as? ReduceKernel, let blocked = pool.overChannelBlocks { (kernel, readsBlocks) = (blocked, true) }
            if let pool = kernel as? PoolingKernel, let blocked = pool.overChannelBlocks { (kernel, readsBlocks, writesBlocks) = (blocked, true, true) }
            if kernel is ActivationKernel { (readsBlocks, writesBlocks) = (true, true) }
            if kernel is BinaryKernel, plan.outputShape == shape, plan.operands.count == 2, case .runtime(let other, shape) = plan.operands[1],
               blockedValues.contains(other) {
                (readsBlocks, writesBlocks) = (true, true)
            }
            if let affine = channelAffine(node, plan, shape: shape, overBlocks: true) { (kernel, readsBlocks, writesBlocks) = (affine, true, true) }
        }
        if let scale = blockedChannelScale(node, plan) { (kernel, readsBlocks, writesBlocks) = (scale, true, true) }
        // On planes too, a Mul by one constant per channel is a channel affine, which an activation
        // after it joins (fuseActivationIntoLastStep).
        if !readsBlocks, !(kernel is ChannelAffineKernel), case .runtime(_, let shape)? = plan.operands.first,
           let affine = channelAffine(node, plan, shape: shape, overBlocks: false) {
            kernel = affine
        }
        // A per-channel scale is laid out the same in both layouts: it is read as it is.
        let scaleInput = (kernel as? BlockedChannelScaleKernel).map { 1 - $0.value }
        let dataInputs = try plan.operands.enumerated().map { index, value throws(InferenceError) in
            let operand = try operand(value, of: node)
            return index == scaleInput ? operand : laidOut(operand, blocked: readsBlocks)
        }
        let allConstant = plan.operands.allSatisfy { if case .constant = $0 { true } else { false } }
        if allConstant, plan.otherOutputShapes.isEmpty {
            values[node.outputs[0]] = .constant(.float(evaluate(kernel, inputs: dataInputs, shape: plan.outputShape)))
            return
        }
        // A Reshape (Flatten, Squeeze, Unsqueeze) of a value a step computes is the same floats in
        // the same order: its output is an alias of that value, and no step (ShuffleNet's channel
        // shuffles and splits copied 32 values per image, slower on 2 threads than on 1).
        if kernel is CopyKernel, Self.reshapeOperators.contains(node.op), case .value(let id) = dataInputs[0], !graphInputs.contains(id) {
            let output = newValue(node.outputs[0], shape: plan.outputShape)
            aliases[output] = aliases[id] ?? (id, 0)
            return
        }
        let output = newValue(node.outputs[0], shape: plan.outputShape)
        // (The importer names every output such a node has, those the model leaves out too.)
        let others = plan.otherOutputShapes.enumerated().map { newValue(node.outputs[$0.offset + 1], shape: $0.element) }
        if writesBlocks { blockedValues.insert(output) }
        var operands = dataInputs
        if let concat = kernel as? ConcatKernel {
            (kernel, operands) = placeConcatInputs(concat, operands, output: output)
            if operands.isEmpty { return }
        }
        let concat = kernel as? ConcatKernel
        var description = StepDescription(kind: .node, operators: [node.op], nodes: [node.label], variant: kernel.variant,
                                          layout: writesBlocks ? .channelBlocks : .nchw,
                                          inPlace: concat.flatMap { $0.inPlace > 0 ? ($0.inPlace, $0.inPlace + $0.parts.count) : nil })
        description.layer = node.name
        steps.append(Step(description: description,
                          kernel: kernel, inputs: operands, outputs: [output] + others))
    }

    /// A Split of a run-time value: one copy step per output.
    private func compileSplit(_ node: Node, inputs: [CompiledValue?]) throws(InferenceError) {
        guard case .runtime(let id, let shape)? = inputs.first ?? nil else { throw shapeError(node, "has no input") }
        let source = laidOut(.value(id), blocked: false)
        for (name, map) in zip(node.outputs, try splitMaps(node, input: shape)) where !name.isEmpty {
            let output = newValue(name, shape: map.resultShape)
            steps.append(Step(description: StepDescription(kind: .nodeOutput, operators: [node.op], nodes: [node.label, name], layout: .nchw),
                              kernel: AxisMapKernel(map: map, fill: 0), inputs: [source], outputs: [output]))
        }
    }

    /// Whether another value is an alias of part or all of `id` (a Reshape of it, a copy to the same
    /// shape): a fusion into the step computing `id` would change what that alias reads too.
    private func isAliased(_ id: Int) -> Bool { aliases.values.contains { $0.base == id } }

    /// An activation right after a fused residual Add (ResNet's Add then Relu) joins the same
    /// convolution: its sums start from bias + the residual and the activation runs as they are
    /// stored, so it sees the Add's result, and the value stays in the layout the chain runs in.
    /// One after a per-channel scale and shift, or a MatMul (a transformer's GELU), joins it the same way.
    private func fuseActivationIntoLastStep(_ node: Node, inputs: [CompiledValue?]) -> Bool {
        guard Activation.operators.contains(node.op), let last = steps.last, last.outputs.count == 1,
              case .runtime(let id, let shape)? = inputs.first ?? nil, id == last.outputs[0], readers[node.inputs[0], default: 0] == 1,
              !isAliased(id), let activation = Activation.of(node, constants: OperatorCompiler.constants(of: node, inputs)) else { return false }
        let kernel: any Kernel
        if var convolution = last.kernel as? ConvolutionKernel, convolution.residual, convolution.activation == nil {
            convolution.activation = activation
            kernel = convolution
        } else if var affine = last.kernel as? ChannelAffineKernel, affine.activation == nil {
            affine.activation = activation
            kernel = affine
        } else if var product = last.kernel as? MatMulKernel, product.activation == nil {
            product.activation = activation
            kernel = product
        } else {
            return false
        }
        joinLastStep(node, kernel: kernel, shape: shape)
        return true
    }

    /// The last step becomes `kernel`, reading `inputs` (its own by default), with `node` joined to
    /// its description (and the kernel's variant with `takingVariant`); `node`'s output, of
    /// `shape`, is the step's.
    private func joinLastStep(_ node: Node, kernel: any Kernel, inputs: [Operand]? = nil, takingVariant: Bool = false, shape: [Int]) {
        let last = steps[steps.count - 1]
        var fused = last.description
        (fused.operators, fused.nodes) = (fused.operators + [node.op], fused.nodes + [node.label])
        if takingVariant { fused.variant = kernel.variant }
        steps[steps.count - 1] = Step(description: fused, kernel: kernel, inputs: inputs ?? last.inputs, outputs: last.outputs)
        values[node.outputs[0]] = .runtime(id: last.outputs[0], shape: shape)
    }

    /// An Add of a constant of one value per channel ([C, 1, 1], only 1s before) to the output of
    /// the per-channel scale just computed, read by nothing else (a GroupNorm's γ then β as
    /// exporters write it: BiT's): the shift joins the scale's step, and an activation after it
    /// can join that too (three steps become one).
    private func fuseShiftIntoLastAffine(_ node: Node, inputs: [CompiledValue?]) -> Bool {
        guard node.op == "Add", inputs.count == 2, let last = steps.last, last.outputs.count == 1,
              var affine = last.kernel as? ChannelAffineKernel, affine.activation == nil,
              let side = (0..<2).first(where: { if case .runtime(last.outputs[0], _)? = inputs[$0] { true } else { false } }),
              case .runtime(let id, let shape)? = inputs[side], readers[node.inputs[side], default: 0] == 1, !isAliased(id),
              case .constant(let constant)? = inputs[1 - side], let shift = constant.floatTensor, shape.count == 4,
              (3...4).contains(shift.shape.count), Array(shift.shape.suffix(3)) == [shape[1], 1, 1],
              shift.shape.dropLast(3).allSatisfy({ $0 == 1 }) else { return false }
        affine.shift = zip(affine.shift, shift.data).map(+)
        joinLastStep(node, kernel: affine, shape: shape)
        return true
    }

    /// A Quantize of the product that a Mul of NCHW planes of one image by a run-time [1, C, 1, 1]
    /// value (squeeze-excitation's scale, then QuantizeLinear for the integer layer after it; a
    /// batch runs image by image where its images stay apart) has just computed, read by nothing
    /// else: the Mul's step becomes the Quantize, multiplying as it reads (each product rounded as
    /// the Mul rounds it), and the product is never stored.
    private func fuseChannelScaleIntoQuantize(_ node: Node, _ plan: KernelPlan) -> Bool {
        guard var quantize = plan.kernel as? QuantizeKernel, let last = steps.last, last.outputs.count == 1, last.inputs.count == 2,
              case .runtime(let id, let shape)? = plan.operands.first, id == last.outputs[0], readers[node.inputs[0], default: 0] == 1,
              !isAliased(id), !blockedValues.contains(id), shape.count == 4, shape[0] == 1, let product = last.kernel as? BinaryKernel, product.operation == .mul,
              let planes = product.planes, planes.inner == shape[2] * shape[3] else { return false }
        quantize.scaledByChannel = true
        joinLastStep(node, kernel: quantize, inputs: [last.inputs[planes.whole], last.inputs[1 - planes.whole]], takingVariant: true, shape: shape)
        return true
    }

    /// A Mul of a channel-blocked [N, C, H, W] value by a run-time [N, C, 1, 1] one (squeeze-
    /// excitation's scale) as a kernel over the blocks, so the chain of convolutions around it
    /// stays in blocks; nil for any other node.
    private func blockedChannelScale(_ node: Node, _ plan: KernelPlan) -> BlockedChannelScaleKernel? {
        guard let binary = plan.kernel as? BinaryKernel, binary.operation == .mul, let planes = binary.planes, plan.operands.count == 2,
              case .runtime(let id, let shape) = plan.operands[planes.whole], blockedValues.contains(id), shape.count == 4,
              shape[1] % 8 == 0, planes.inner == shape[2] * shape[3], case .runtime(_, let scaleShape) = plan.operands[1 - planes.whole],
              scaleShape.count == 4, scaleShape[1] == shape[1], scaleShape[0] == shape[0] || scaleShape[0] == 1 else { return nil }
        return BlockedChannelScaleKernel(batch: shape[0], channels: shape[1], plane: planes.inner, value: planes.whole,
                                         scalePerImage: scaleShape[0] == shape[0])
    }

    /// A per-channel scale and shift (BatchNormalization, or a Mul by one constant per channel) of
    /// an NCHW value, `overBlocks` of one in channel blocks (nil when it is neither, or the channels
    /// are not whole blocks).
    private func channelAffine(_ node: Node, _ plan: KernelPlan, shape: [Int], overBlocks: Bool) -> ChannelAffineKernel? {
        guard shape.count == 4, !overBlocks || shape[1] % 8 == 0 else { return nil }
        if var affine = plan.kernel as? ChannelAffineKernel {
            affine.overChannelBlocks = overBlocks
            return affine
        }
        // The constant, aligned to [N, C, H, W] from the right, is [C, 1, 1] with only 1s before.
        guard node.op == "Mul", plan.operands.count == 2, case .constant(let constant) = plan.operands[1],
              let scale = constant.floatTensor, (3...4).contains(scale.shape.count),
              Array(scale.shape.suffix(3)) == [shape[1], 1, 1], scale.shape.dropLast(3).allSatisfy({ $0 == 1 }) else { return nil }
        return ChannelAffineKernel(batch: shape[0], plane: shape[2] * shape[3], scale: scale.data,
                                   shift: [Float](repeating: 0, count: shape[1]), overChannelBlocks: overBlocks)
    }

    /// A Concat of one image along channels (nothing before the axis but a batch of 1): each input
    /// a step computes becomes an alias of its place in the output, so that step writes it there
    /// and the Concat copies only the rest (graph inputs, constants, a value repeated or already
    /// part of another, as a merged sibling's slice is), or is no step at all. An input that is
    /// itself a Concat's output takes its parts along (Inception's nested ones). InceptionV3's 15
    /// Concat steps, about 1 ms per image on 1 thread, become 9 that copy a merged slice each.
    private func placeConcatInputs(_ concat: ConcatKernel, _ operands: [Operand], output: Int) -> (ConcatKernel, [Operand]) {
        guard concat.outer == 1 else { return (concat, operands) }
        var copied: [(operand: Operand, part: (start: Int, count: Int))] = []
        for (operand, part) in zip(operands, concat.parts) {
            guard case .value(let id) = operand, !graphInputs.contains(id), aliases[id] == nil else {
                copied.append((operand, part))
                continue
            }
            for (other, alias) in aliases where alias.base == id { aliases[other] = (output, part.start + alias.offset) }
            aliases[id] = (output, part.start)
        }
        return (ConcatKernel(outer: 1, total: concat.total, parts: copied.map(\.part), inPlace: operands.count - copied.count),
                copied.map(\.operand))
    }

    /// Whether a Concat runs on channel blocks: along the channels of 4-D values, every part whole
    /// blocks, and most of its floats in blocks already (the rest are moved in). For each image a
    /// part's blocks then follow the ones before it as its channels do in NCHW, so the same copies
    /// (or aliases) concatenate them.
    private func concatenatesBlocks(_ node: Node, _ operands: [CompiledValue]) -> Bool {
        guard kernels.loops.channelBlocks != nil, [1, -3].contains(node.int("axis", default: 0)) else { return false }
        var blocked = 0, total = 0
        for operand in operands {
            guard case .runtime(let id, let shape) = operand, shape.count == 4, shape[1] % 8 == 0 else { return false }
            let floats = shape.reduce(1, *)
            total += floats
            if blockedValues.contains(id) { blocked += floats }
        }
        return 2 * blocked > total
    }

    /// Sibling pointwise convolutions (ConvolutionGroups.pointwiseSiblings) as one convolution over
    /// their stacked weights, each member's output a slice of its output channels: for one image
    /// those are consecutive floats, so the slice is an alias into the merged value and costs no
    /// step. The input is then read once and its strips packed once for every output channel
    /// (InceptionV3's 35x35 modules: 1x1 convolutions of 64, 48 and 64 channels over 288,
    /// standalone 1.92 -> 1.54 ms on 1 thread, 1.26 -> 0.89 on 2). False, compiling nothing,
    /// where the input holds more than one image (a slice would not be contiguous).
    private func compileSiblings(_ members: [Node]) throws(InferenceError) -> Bool {
        guard case .runtime(_, let shape)? = values[members[0].inputs[0]], shape.count == 4, shape[0] == 1 else { return false }
        let weights = members.compactMap { $0.input(1).flatMap { values[$0]?.constant?.floatTensor } }
        // Each member 1x1 over the whole input (a model whose weights say otherwise compiles member
        // by member, and its own checks name what is wrong).
        guard weights.count == members.count, weights.allSatisfy({ $0.shape.count == 4 && Array($0.shape[1...]) == [shape[1], 1, 1] }),
              zip(members, weights).allSatisfy({ member, weights in
                  member.input(2).flatMap { values[$0]?.constant?.floatTensor.map { $0.data.count == weights.shape[0] } } ?? true
              }) else { return false }
        let channels = weights.map { $0.shape[0] }, total = channels.reduce(0, +)
        let bias = zip(members, channels).flatMap { member, count in
            member.input(2).flatMap { values[$0]?.constant?.floatTensor?.data } ?? [Float](repeating: 0, count: count)
        }
        // The stacked weights are values only while the merged node compiles (packed, they are dropped).
        let name = members.map(\.name).joined(separator: " + ")
        let (weightsName, biasName) = ("\(name)#weights", "\(name)#bias")
        values[weightsName] = .constant(.float(Tensor(shape: [total, shape[1], 1, 1], data: weights.flatMap(\.data))))
        values[biasName] = .constant(.float(Tensor(shape: [total], data: bias)))
        defer { values[weightsName] = nil; values[biasName] = nil }
        var merged = Node(name: name, op: "Conv", inputs: [members[0].inputs[0], weightsName, biasName], outputs: ["\(name)#output"],
                          attributes: [:])
        for key in [IRAttribute.fusedActivation, IRAttribute.channelBlocked] { merged.attributes[key] = members[0].attributes[key] }
        try compile(merged)  // a step: its input is computed at run time
        // A slice of channel blocks (each member's channels whole blocks) lies as its channels do in NCHW.
        let base = steps[steps.count - 1].outputs[0], (height, width) = (valueShapes[base][2], valueShapes[base][3])
        var start = 0
        for (member, count) in zip(members, channels) {
            let slice = newValue(member.outputs[0], shape: [1, count, height, width])
            aliases[slice] = (base, start * height * width)
            if blockedValues.contains(base) { blockedValues.insert(slice) }
            start += count
        }
        return true
    }

    /// A residual Add (a block's output plus its input, as in EfficientNet, MobileNetV2 and ResNet)
    /// right after the convolution that computes one side, read nowhere else: the convolution
    /// starts its sums from bias + the other side instead, and the Add costs no pass of its own.
    /// Same shapes only; an activation after the Add stays a step of its own.
    private func fuseResidualAdd(_ node: Node, inputs: [CompiledValue?]) throws(InferenceError) -> Bool {
        guard node.op == "Add", inputs.count == 2, let last = steps.last, last.outputs.count == 1,
              var convolution = last.kernel as? ConvolutionKernel, convolution.canAddResidual,
              case .runtime(let a, let shapeA)? = inputs[0], case .runtime(let b, let shapeB)? = inputs[1],
              shapeA == shapeB else { return false }
        let (produced, other) = last.outputs[0] == a ? (0, b) : last.outputs[0] == b ? (1, a) : (-1, 0)
        guard produced >= 0, readers[node.inputs[produced], default: 0] == 1, !isAliased(last.outputs[0]) else { return false }
        convolution.residual = true
        let added = laidOut(.value(other), blocked: convolution.writesChannelBlocks, insertingAt: steps.count - 1)
        joinLastStep(node, kernel: convolution, inputs: last.inputs + [added], takingVariant: true, shape: shapeA)
        return true
    }

    /// Runs a kernel whose inputs are all constants, at load.
    private func evaluate(_ kernel: any Kernel, inputs: [Operand], shape: [Int]) -> Tensor {
        var result = Tensor(zeros: shape)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: max(kernel.scratchCount(threads: 1), 1))
        defer { scratch.deallocate() }
        let pointers = inputs.map { operand -> UnsafePointer<Float> in
            if case .constant(let pointer) = operand { return pointer }
            preconditionFailure("evaluate() takes constant operands only")
        }
        result.data.withUnsafeMutableBufferPointer { output in
            kernel.run(KernelContext(inputs: pointers, outputs: [output.baseAddress!], scratch: scratch, team: ThreadTeam(size: 1),
                                    kernels: .portable, integerKernels: .portable))
        }
        return result
    }
}

/// What the operator compiler produces for one node.
struct KernelPlan {
    let kernel: any Kernel
    let operands: [CompiledValue]
    let outputShape: [Int]
    /// The shapes of the node's outputs after the first, which the kernel writes too (LSTM's Y_h and Y_c).
    var otherOutputShapes: [[Int]] = []
}
