/// How Slice, Pad, Expand, Tile, Gather and Split nodes become AxisMaps, their arguments read from
/// constants known at load; the same maps run on constants at load and on values at run time.
extension Compiler {
    /// The operators whose one output is an AxisMap of their first input.
    static let axisMapOperators: Set<String> = ["Slice", "Pad", "Expand", "Tile", "Gather"]

    /// The AxisMap of a Slice, Pad, Expand, Tile or Gather node over an input of `shape`.
    func axisMap(_ node: Node, input shape: [Int]) throws(InferenceError) -> AxisMap {
        switch node.op {
        case "Slice": return try sliceMap(node, shape)
        case "Pad": return try padMap(node, shape)
        case "Expand": return try expandMap(node, shape)
        case "Tile": return try tileMap(node, shape)
        case "Gather": return try gatherMap(node, shape)
        default: throw fail(node, "is not a copy by index maps")
        }
    }

    /// The value a Pad node fills with (its third input); nil for zero.
    func padValue(_ node: Node) throws(InferenceError) -> Constant? {
        try constantInput(node, 2)
    }

    /// One AxisMap per output of a Split node: consecutive slices along its axis.
    func splitMaps(_ node: Node, input shape: [Int]) throws(InferenceError) -> [AxisMap] {
        let axis = try ShapeFolding.normalize([node.int("axis", default: 0)], rank: shape.count, node: node, compiler: self)[0]
        let dimension = shape[axis], parts = node.outputs.count
        let sizes: [Int]
        if let given = opset >= 13 ? try constantInput(node, 1)?.integers : node.ints("split") {
            sizes = given
        } else if case .int(let outputs) = node.attributes["num_outputs"] {
            guard outputs == parts, outputs > 0 else { throw shapeError(node, "num_outputs \(outputs) for \(parts) outputs") }
            let size = (dimension + outputs - 1) / outputs
            sizes = (0..<outputs).map { max(0, min(size, dimension - $0 * size)) }
        } else {
            guard dimension % parts == 0 else { throw shapeError(node, "cannot split \(dimension) into \(parts) equal parts") }
            sizes = [Int](repeating: dimension / parts, count: parts)
        }
        guard sizes.count == parts, sizes.allSatisfy({ $0 >= 0 && $0 <= dimension }), sizes.reduce(0, +) == dimension else {
            throw shapeError(node, "split sizes \(sizes) do not cut \(dimension) into \(parts) outputs")
        }
        var start = 0
        return sizes.map { size in
            var sources = shape.map(AxisMap.identity)
            sources[axis] = Array(start..<(start + size))
            start += size
            return AxisMap(inputShape: shape, sources: sources)
        }
    }

    private func sliceMap(_ node: Node, _ shape: [Int]) throws(InferenceError) -> AxisMap {
        let (starts, ends) = (try constantInput(node, 1)?.integers, try constantInput(node, 2)?.integers)
        let (axes, steps) = (try constantInput(node, 3)?.integers, try constantInput(node, 4)?.integers)
        guard let starts, let ends, starts.count == ends.count, (axes ?? starts).count == starts.count,
              (steps ?? starts).count == starts.count else {
            throw shapeError(node, "needs starts and ends, and axes and steps if given, of one length")
        }
        let resolved = try ShapeFolding.normalize(axes ?? Array(starts.indices), rank: shape.count, node: node, compiler: self)
        guard Set(resolved).count == resolved.count else { throw shapeError(node, "axes \(resolved) repeat") }
        var sources = shape.map(AxisMap.identity)
        for (i, axis) in resolved.enumerated() {
            let step = steps?[i] ?? 1
            guard step != 0 else { throw shapeError(node, "a step of 0") }
            sources[axis] = Self.sliceIndices(count: shape[axis], start: starts[i], end: ends[i], step: step)
        }
        return AxisMap(inputShape: shape, sources: sources)
    }

    /// The indices a slice reads along one axis of `count`, clamped as ONNX says: negative bounds
    /// count from the end, and any bound (INT64_MIN and INT64_MAX included) is clamped into range.
    static func sliceIndices(count: Int, start: Int, end: Int, step: Int) -> [Int] {
        func clamp(_ value: Int, _ low: Int, _ high: Int) -> Int { min(max(value < 0 ? value + count : value, low), high) }
        let first = step > 0 ? clamp(start, 0, count) : clamp(start, 0, count - 1)
        let last = step > 0 ? clamp(end, 0, count) : clamp(end, -1, count - 1)
        let span = step > 0 ? last - first : first - last
        guard span > 0 else { return [] }
        let taken = Int(UInt(span - 1) / step.magnitude) + 1
        return (0..<taken).map { first + $0 * step }
    }

    private func padMap(_ node: Node, _ shape: [Int]) throws(InferenceError) -> AxisMap {
        let mode = node.string("mode", default: "constant")
        guard ["constant", "reflect", "edge", "wrap"].contains(mode) else { throw fail(node, "padding mode '\(mode)' is not supported") }
        guard let pads = try constantInput(node, 1)?.integers else { throw fail(node, "pads are missing") }
        let axes = try constantInput(node, 3)?.integers.map { raw throws(InferenceError) in
            try ShapeFolding.normalize(raw, rank: shape.count, node: node, compiler: self)
        } ?? Array(shape.indices)
        guard pads.count == 2 * axes.count else { throw shapeError(node, "\(pads.count) pads for \(axes.count) axes") }
        let limit = ShapeMath.maximumElements
        guard pads.allSatisfy({ $0 >= -limit && $0 <= limit }) else { throw shapeError(node, "pads \(pads) are out of range") }
        var begin = [Int](repeating: 0, count: shape.count), end = begin
        for (i, axis) in axes.enumerated() {
            begin[axis] = pads[i]
            end[axis] = pads[i + axes.count]
        }
        let output = try checked(node, shape.indices.map { shape[$0] + begin[$0] + end[$0] })
        // Negative pads crop first; the rest pads the cropped extent (as ONNX Runtime does).
        let sources = try shape.indices.map { axis throws(InferenceError) -> [Int] in
            let low = max(-begin[axis], 0), count = shape[axis] - low - max(-end[axis], 0), before = max(begin[axis], 0)
            if count <= 0 && mode != "constant" && output[axis] > 0 {
                throw shapeError(node, "\(mode) padding of an empty axis")
            }
            return (0..<output[axis]).map { position in
                let index = position - before
                switch mode {
                case "edge": return low + min(max(index, 0), count - 1)
                case "wrap": return low + (index % count + count) % count
                case "reflect":
                    guard count > 1 else { return low }
                    let period = 2 * (count - 1), folded = (index % period + period) % period
                    return low + (folded < count ? folded : period - folded)
                default: return index >= 0 && index < count ? low + index : -1
                }
            }
        }
        return AxisMap(inputShape: shape, sources: sources)
    }

    private func expandMap(_ node: Node, _ shape: [Int]) throws(InferenceError) -> AxisMap {
        guard let target = try constantInput(node, 1)?.integers else { throw fail(node, "the target shape is missing") }
        guard let output = BinaryKernel.broadcast(shape, target), output.allSatisfy({ $0 >= 0 }) else {
            throw shapeError(node, "cannot expand \(shape) to \(target)")
        }
        let padded = [Int](repeating: 1, count: output.count - shape.count) + shape
        _ = try checked(node, output)
        return AxisMap(inputShape: padded, sources: zip(padded, output).map { $0 == 1 ? [Int](repeating: 0, count: $1) : AxisMap.identity($1) })
    }

    private func tileMap(_ node: Node, _ shape: [Int]) throws(InferenceError) -> AxisMap {
        guard let repeats = try constantInput(node, 1)?.integers, repeats.count == shape.count, repeats.allSatisfy({ $0 >= 0 }) else {
            throw shapeError(node, "needs one repeat count of at least 0 per axis of \(shape)")
        }
        let output = try checked(node, zip(shape, repeats).map { $0.multipliedReportingOverflow(by: $1).overflow ? -1 : $0 * $1 })
        return AxisMap(inputShape: shape, sources: zip(shape, output).map { count, total in (0..<total).map { $0 % count } })
    }

    private func gatherMap(_ node: Node, _ shape: [Int]) throws(InferenceError) -> AxisMap {
        let axis = try ShapeFolding.normalize([node.int("axis", default: 0)], rank: shape.count, node: node, compiler: self)[0]
        guard let indices = try constantInput(node, 1), let values = indices.integers else {
            throw fail(node, "the indices must be integers known at load")
        }
        let count = shape[axis]
        var sources = shape.map(AxisMap.identity)
        sources[axis] = try values.map { index throws(InferenceError) -> Int in
            let resolved = index < 0 ? index + count : index
            guard resolved >= 0 && resolved < count else { throw shapeError(node, "index \(index) is out of range for \(count)") }
            return resolved
        }
        let result = Array(shape[..<axis]) + indices.shape + shape[(axis + 1)...]
        return AxisMap(inputShape: shape, sources: sources, resultShape: try checked(node, result))
    }

    /// `shape` when it is possible and within the engine's size limit.
    private func checked(_ node: Node, _ shape: [Int]) throws(InferenceError) -> [Int] {
        guard ShapeMath.count(shape) != nil else {
            throw shapeError(node, "the output \(shape) is impossible or too large (over \(ShapeMath.maximumElements) elements)")
        }
        return shape
    }
}
