/// Shape rules shared by run-time reshapes and load-time folding: output shapes of the
/// shape-only operators, and axes as attributes or inputs.
enum ShapeFolding {
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
