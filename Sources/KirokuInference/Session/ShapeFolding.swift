/// Shape rules shared by run-time reshapes and load-time folding, and the integer evaluation
/// of the Shape → Gather → Unsqueeze → Concat → Cast chains that converters emit.
enum ShapeFolding {
    /// Evaluates `node` at load when its result is fully known: shape arithmetic on integer
    /// tensors, and shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze) on constants. Nil when
    /// the node must run at run time.
    static func fold(_ node: Node, inputs: [CompiledValue?], compiler: Compiler) throws(InferenceError) -> [Constant]? {
        let constants = inputs.map { value -> Constant? in
            if case .constant(let constant) = value { return constant }
            return nil
        }
        switch node.op {
        case "Shape":
            guard let input = inputs.first ?? nil else { return nil }
            let rank = input.shape.count
            func clamp(_ axis: Int) -> Int { min(max(axis < 0 ? axis + rank : axis, 0), rank) }
            let start = clamp(node.int("start", default: 0)), end = clamp(node.int("end", default: rank))
            let dims = start < end ? Array(input.shape[start..<end]) : []
            return [.int64(shape: [dims.count], values: dims.map { Int64($0) })]
        case "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout":
            guard let data = constants.first ?? nil else { return nil }
            let shape = try outputShape(of: node, input: data.shape, compiler: compiler)
            switch data {
            case .float(let tensor): return [.float(Tensor(shape: shape, data: tensor.data))]
            case .int64(_, let values): return [.int64(shape: shape, values: values)]
            }
        case "Cast":
            guard let data = constants.first ?? nil else { return nil }
            switch (data, node.int("to", default: 1)) {
            case (.int64(let shape, let values), 1): return [.float(Tensor(shape: shape, data: values.map { Float($0) }))]
            case (.float(let tensor), 7), (.float(let tensor), 6): return [.int64(shape: tensor.shape, values: tensor.data.map { Int64($0) })]
            case (.int64, 7), (.int64, 6), (.float, 1): return [data]
            default: throw compiler.fail(node, "casting to element type \(node.int("to", default: 0)) is not supported")
            }
        case "Gather":
            guard let data = constants.first ?? nil, let indexConstant = constants.count > 1 ? constants[1] : nil,
                  let indices = indexConstant.integers else { return nil }
            let axis = node.int("axis", default: 0)
            guard axis == 0 || axis == -1 && data.shape.count == 1, let first = data.shape.first else {
                throw compiler.fail(node, "Gather is supported on constant tensors along axis 0 only")
            }
            let inner = data.shape.dropFirst().reduce(1, *)
            let picked = try indices.map { index throws(InferenceError) -> Int in
                let resolved = index < 0 ? index + first : index
                guard resolved >= 0 && resolved < first else { throw compiler.shapeError(node, "index \(index) is out of range for \(first)") }
                return resolved
            }
            let shape = indexConstant.shape + data.shape.dropFirst()
            switch data {
            case .int64(_, let values):
                return [.int64(shape: shape, values: picked.flatMap { values[($0 * inner)..<(($0 + 1) * inner)] })]
            case .float(let tensor):
                return [.float(Tensor(shape: shape, data: picked.flatMap { tensor.data[($0 * inner)..<(($0 + 1) * inner)] }))]
            }
        case "Concat", "Add", "Sub", "Mul", "Div":
            // Integer arithmetic only; float constants go through the run-time kernels at load.
            guard !constants.isEmpty, constants.allSatisfy({ $0?.integers != nil }) else { return nil }
            let operands = constants.compactMap { $0 }
            if node.op == "Concat" {
                guard operands.allSatisfy({ $0.shape.count == 1 }) else {
                    throw compiler.fail(node, "integer Concat is supported on 1-D shape tensors only")
                }
                let values = operands.flatMap { $0.integers! }
                return [.int64(shape: [values.count], values: values.map { Int64($0) })]
            }
            let a = operands[0], b = operands[1]
            guard let shape = BinaryKernel.broadcast(a.shape, b.shape), a.shape == shape || a.shape.reduce(1, *) == 1,
                  b.shape == shape || b.shape.reduce(1, *) == 1 else {
                throw compiler.fail(node, "integer \(node.op) is supported between equal shapes or with a scalar")
            }
            let x = a.integers!, y = b.integers!
            let count = shape.reduce(1, *)
            let result = try (0..<count).map { i throws(InferenceError) -> Int64 in
                let l = x[x.count == 1 ? 0 : i], r = y[y.count == 1 ? 0 : i]
                let (value, overflow): (Int, Bool)
                switch node.op {
                case "Add": (value, overflow) = l.addingReportingOverflow(r)
                case "Sub": (value, overflow) = l.subtractingReportingOverflow(r)
                case "Mul": (value, overflow) = l.multipliedReportingOverflow(by: r)
                default:
                    guard r != 0 else { throw compiler.shapeError(node, "integer division by zero") }
                    (value, overflow) = l.dividedReportingOverflow(by: r)
                }
                guard !overflow else { throw compiler.shapeError(node, "integer overflow in \(l) and \(r)") }
                return Int64(value)
            }
            return [.int64(shape: shape, values: result)]
        default:
            return nil
        }
    }

    /// The output shape of a shape-only operator (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
    static func outputShape(of node: Node, input: [Int], compiler: Compiler) throws(InferenceError) -> [Int] {
        let rank = input.count
        switch node.op {
        case "Reshape":
            guard let target = try compiler.constantInput(node, 1)?.integers else {
                throw compiler.fail(node, "the target shape must be known at load")
            }
            let allowZero = node.int("allowzero", default: 0) == 1
            var shape = target.enumerated().map { index, size in size == 0 && !allowZero && index < rank ? input[index] : size }
            let total = ShapeMath.count(input) ?? 0
            guard shape.filter({ $0 == -1 }).count <= 1, let known = ShapeMath.count(shape.filter { $0 != -1 }) else {
                throw compiler.shapeError(node, "cannot reshape \(input) to \(target)")
            }
            if let unknown = shape.firstIndex(of: -1) {
                guard known > 0, total % known == 0 else { throw compiler.shapeError(node, "cannot reshape \(input) to \(target)") }
                shape[unknown] = total / known
            }
            guard ShapeMath.count(shape) == total else { throw compiler.shapeError(node, "cannot reshape \(input) to \(target)") }
            return shape
        case "Flatten":
            var axis = node.int("axis", default: 1)
            if axis < 0 { axis += rank }
            guard axis >= 0 && axis <= rank else { throw compiler.shapeError(node, "axis \(axis) for rank \(rank)") }
            return [input[..<axis].reduce(1, *), input[axis...].reduce(1, *)]
        case "Squeeze":
            let axes = try axesOf(node, compiler: compiler, rank: rank)
            guard let axes else { return input.filter { $0 != 1 } }
            guard axes.allSatisfy({ input[$0] == 1 }) else { throw compiler.shapeError(node, "cannot squeeze axes \(axes) of \(input)") }
            return input.enumerated().filter { !axes.contains($0.offset) }.map(\.element)
        case "Unsqueeze":
            let added = try rawAxes(node, compiler: compiler)?.count ?? 0
            guard added > 0, let axes = try axesOf(node, compiler: compiler, rank: rank + added) else {
                throw compiler.fail(node, "Unsqueeze needs axes")
            }
            var shape = input
            for axis in axes.sorted() { shape.insert(1, at: axis) }
            return shape
        default:
            return input
        }
    }

    /// Axes from the attribute (before opset 13) or the second input, normalised to 0..<rank.
    static func axesOf(_ node: Node, compiler: Compiler, rank: Int) throws(InferenceError) -> [Int]? {
        return try rawAxes(node, compiler: compiler).map { axes throws(InferenceError) in try normalize(axes, rank: rank, node: node, compiler: compiler) }
    }

    /// Axes as given: the attribute before opset 13, the second input after.
    static func rawAxes(_ node: Node, compiler: Compiler) throws(InferenceError) -> [Int]? {
        if let axes = node.ints("axes") { return axes }
        return try compiler.constantInput(node, 1)?.integers
    }

    /// Axes with negative values counted from the end, each checked against the rank.
    static func normalize(_ axes: [Int], rank: Int, node: Node, compiler: Compiler) throws(InferenceError) -> [Int] {
        try axes.map { axis throws(InferenceError) -> Int in
            let resolved = axis < 0 ? axis + rank : axis
            guard resolved >= 0 && resolved < rank else { throw compiler.shapeError(node, "axis \(axis) for rank \(rank)") }
            return resolved
        }
    }
}
