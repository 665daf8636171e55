import Foundation

/// Evaluates at load every node whose inputs are known once the input size is fixed
/// (initializers, constants, shapes): the shape subgraphs exporters write (Shape, Gather, Slice,
/// Concat, ConstantOfShape, Range, Expand, Equal, Where, Cast, arithmetic on integers) and
/// shape-only operators on constants, by a small reference implementation on int64 (int32 and
/// bool widened to it) and float tensors. The run-time graph keeps only real work.
enum ConstantFolding {
    /// The most elements an elementwise operator is evaluated for at load (16M): shape
    /// computations are small, and a hostile model's huge ones are refused, not allocated.
    static let largestEvaluated = 1 << 24

    /// The operators that have a meaning only on values known at load here.
    static let loadTimeOnly: Set<String> = [
        "Shape", "Size", "Cast", "ConstantOfShape", "Range", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
        "Not", "And", "Or", "Xor", "Where", "Sign", "Mod",
    ]

    /// The node's outputs when they are known at load; nil when the node must run at run time.
    static func fold(_ node: Node, inputs: [CompiledValue?], compiler: Compiler) throws(InferenceError) -> [Constant]? {
        // Shape and Size need only the input's shape, known at load for run-time values too.
        if node.op == "Shape" || node.op == "Size", let input = inputs.first ?? nil {
            let rank = input.shape.count
            guard node.op == "Shape" else { return [.int64(shape: [], values: [Int64(input.shape.reduce(1, *))])] }
            func clamp(_ axis: Int) -> Int { min(max(axis < 0 ? axis + rank : axis, 0), rank) }
            let start = clamp(node.int("start", default: 0)), end = clamp(node.int("end", default: rank))
            let dims = start < end ? Array(input.shape[start..<end]) : []
            return [.int64(shape: [dims.count], values: dims.map { Int64($0) })]
        }
        // Every input given must be known; omitted optional inputs are nil.
        guard let first = inputs.first ?? nil, case .constant(let data) = first,
              inputs.allSatisfy({ $0 == nil || $0?.constant != nil }) else { return nil }
        let constants = inputs.map { $0?.constant }
        func operand(_ index: Int) throws(InferenceError) -> Constant {
            guard index < constants.count, let constant = constants[index] else { throw compiler.shapeError(node, "input \(index) is missing") }
            return constant
        }
        switch node.op {
        case "BatchNormalization" where node.inTrainingMode:
            return try batchStatisticsNorm(node, constants, compiler: compiler)
        case "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout":
            return [data.reshaped(try ShapeFolding.outputShape(of: node, input: data.shape, compiler: compiler))]
        case "Cast":
            return [try cast(data, to: node.int("to", default: 1), node: node, compiler: compiler)]
        case "ConstantOfShape":
            return [try constantOfShape(node, data, compiler: compiler)]
        case "Range":
            return [try range(node, data, try operand(1), try operand(2), compiler: compiler)]
        case _ where Compiler.axisMapOperators.contains(node.op):
            let map = try compiler.axisMap(node, input: data.shape)
            try checkEvaluated(map.resultShape, node: node, compiler: compiler)
            return [data.mapped(map, fill: node.op == "Pad" ? try compiler.padValue(node) : nil)]
        case "Split":
            return try compiler.splitMaps(node, input: data.shape).map { data.mapped($0, fill: nil) }
        case "Transpose":
            let perm = node.ints("perm") ?? Array(data.shape.indices.reversed())
            guard perm.sorted() == Array(data.shape.indices) else { throw compiler.shapeError(node, "perm \(perm) for rank \(data.shape.count)") }
            return [data.transposed(perm)]
        case "Concat":
            return [try concat(node, constants.compactMap { $0 }, compiler: compiler)]
        case _ where ["Add", "Sub", "Mul", "Div"].contains(node.op) && data.integers == nil:
            return nil  // float arithmetic on constants runs through the run-time kernels at load
        case "Add", "Sub", "Mul", "Div", "Mod", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor":
            return [try elementwise(node, [data, try operand(1)], compiler: compiler)]
        case "Min", "Max", "Where":
            return [try elementwise(node, constants.compactMap { $0 }, compiler: compiler)]
        case "Not", "Neg", "Abs", "Sign", "Floor", "Ceil", "Sqrt", "Reciprocal":
            return [try elementwise(node, [data], compiler: compiler)]
        case "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax", "ReduceMean":
            return [try reduce(node, data, compiler: compiler)]
        default:
            return nil
        }
    }

    // MARK: Operators

    private static func cast(_ data: Constant, to type: Int, node: Node, compiler: Compiler) throws(InferenceError) -> Constant {
        typealias DataType = Onnx_TensorProto.DataType
        switch (data, DataType(rawValue: type)) {
        case (.float, .float), (.float, .double): return data
        case (.int64(let shape, let values), .float), (.int64(let shape, let values), .double):
            return .float(Tensor(shape: shape, data: values.map { Float($0) }))
        case (.float(let tensor), .bool):
            return .int64(shape: tensor.shape, values: tensor.data.map { $0 != 0 ? 1 : 0 })
        case (.float(let tensor), let target?) where integerWidths[target] != nil:
            let values = try tensor.data.map { value throws(InferenceError) -> Int64 in
                guard value.isFinite, abs(value) < 0x1p63 else { throw compiler.shapeError(node, "\(value) has no integer value") }
                return Int64(value.rounded(.towardZero))
            }
            return try cast(.int64(shape: tensor.shape, values: values), to: type, node: node, compiler: compiler)
        case (.int64(let shape, let values), let target?) where integerWidths[target] != nil:
            let (bits, signed) = integerWidths[target]!
            return .int64(shape: shape, values: values.map { value in
                if target == .bool { return value != 0 ? 1 : 0 }
                let kept = bits == 64 ? value : value & (1 << bits - 1)
                return signed && bits < 64 && kept >= 1 << (bits - 1) ? kept - 1 << bits : kept
            })
        default:
            throw compiler.fail(node, "casting to element type \(GraphImporter.typeName(Int32(truncatingIfNeeded: type))) is not supported")
        }
    }

    /// The integer element types a cast may produce: their width and whether they are signed.
    private static let integerWidths: [Onnx_TensorProto.DataType: (bits: Int, signed: Bool)] = [
        .bool: (1, false), .int8: (8, true), .uint8: (8, false), .int16: (16, true), .uint16: (16, false),
        .int32: (32, true), .uint32: (32, false), .int64: (64, true), .uint64: (64, false),
    ]

    private static func constantOfShape(_ node: Node, _ shape: Constant, compiler: Compiler) throws(InferenceError) -> Constant {
        guard let dims = shape.integers, shape.shape.count == 1, ShapeMath.count(dims) != nil else {
            throw compiler.shapeError(node, "the shape \(shape.integers ?? []) is not a possible 1-D shape within the engine's limit")
        }
        try checkEvaluated(dims, node: node, compiler: compiler)
        let value: Constant
        switch node.attributes["value"] {
        case .tensor(let given)?:
            guard given.shape.reduce(1, *) == 1 else { throw compiler.shapeError(node, "value must hold one element") }
            value = given
        default: value = .float(Tensor(shape: [1], data: [0]))
        }
        return value.gathered(shape: dims, offsets: [Int](repeating: 0, count: dims.reduce(1, *)))
    }

    private static func range(_ node: Node, _ start: Constant, _ limit: Constant, _ delta: Constant,
                              compiler: Compiler) throws(InferenceError) -> Constant {
        guard [start, limit, delta].allSatisfy({ $0.shape.reduce(1, *) == 1 }) else { throw compiler.shapeError(node, "start, limit and delta must be scalars") }
        switch (start, limit, delta) {
        case (.int64(_, let s), .int64(_, let l), .int64(_, let d)):
            let (first, last, step) = (s[0], l[0], d[0])
            guard step != 0 else { throw compiler.shapeError(node, "a delta of 0") }
            let span = step > 0 ? last.subtractingReportingOverflow(first) : first.subtractingReportingOverflow(last)
            guard !span.overflow else { throw compiler.shapeError(node, "the range \(first) to \(last) is too long") }
            let count = span.partialValue > 0 ? Int(UInt64(span.partialValue - 1) / step.magnitude) + 1 : 0
            guard count <= largestEvaluated else { throw compiler.shapeError(node, "the range \(first) to \(last) is too long") }
            return .int64(shape: [count], values: (0..<count).map { first + Int64($0) * step })
        case (.float(let s), .float(let l), .float(let d)):
            let (first, last, step) = (s.data[0], l.data[0], d.data[0])
            let steps = ((last - first) / step).rounded(.up)
            guard step != 0, steps.isFinite, steps <= Float(largestEvaluated) else {
                throw compiler.shapeError(node, "the range \(first) to \(last) by \(step) is empty of meaning or too long")
            }
            let count = steps > 0 ? Int(steps) : 0
            return .float(Tensor(shape: [count], data: (0..<count).map { first + Float($0) * step }))
        default:
            throw compiler.fail(node, "start, limit and delta must be of one element type")
        }
    }

    private static func concat(_ node: Node, _ parts: [Constant], compiler: Compiler) throws(InferenceError) -> Constant {
        let rank = parts[0].shape.count
        let axis = try ShapeFolding.normalize([node.int("axis", default: 0)], rank: rank, node: node, compiler: compiler)[0]
        for part in parts where part.shape.count != rank || part.shape.indices.contains(where: { $0 != axis && part.shape[$0] != parts[0].shape[$0] }) {
            throw compiler.shapeError(node, "cannot concatenate \(part.shape) with \(parts[0].shape) along axis \(axis)")
        }
        var shape = parts[0].shape
        shape[axis] = parts.reduce(0) { $0 + $1.shape[axis] }
        try checkEvaluated(shape, node: node, compiler: compiler)
        let outer = shape[..<axis].reduce(1, *), inner = shape[(axis + 1)...].reduce(1, *)
        // The parts joined into one flat operand: offsets into it, part after part.
        var starts: [Int] = [], total = 0
        for part in parts { starts.append(total); total += part.shape.reduce(1, *) }
        let offsets = (0..<outer).flatMap { o in
            parts.indices.flatMap { i in
                let chunk = parts[i].shape[axis] * inner
                return (starts[i] + o * chunk)..<(starts[i] + (o + 1) * chunk)
            }
        }
        guard let joined = Constant.joined(parts) else { throw compiler.fail(node, "inputs of different element types") }
        return joined.gathered(shape: shape, offsets: offsets)
    }

    /// Elementwise operators with NumPy broadcasting: arithmetic and comparisons on either element
    /// type (comparisons and logic give 0 or 1), Where choosing by a condition.
    private static func elementwise(_ node: Node, _ operands: [Constant], compiler: Compiler) throws(InferenceError) -> Constant {
        var shape: [Int] = []
        for operand in operands {
            guard let broadcast = BinaryKernel.broadcast(shape, operand.shape) else {
                throw compiler.shapeError(node, "shapes \(operands.map(\.shape)) do not broadcast")
            }
            shape = broadcast
        }
        guard let count = ShapeMath.count(shape), count <= largestEvaluated else {
            throw compiler.shapeError(node, "the output \(shape) is too large to evaluate at load (over \(largestEvaluated) elements)")
        }
        let offsets = operands.map { Constant.offsets(shape, reading: BinaryKernel.broadcastStrides($0.shape, to: shape)) }
        if node.op == "Where" {
            guard operands.count == 3, let condition = operands[0].integers,
                  let choices = Constant.joined([operands[1], operands[2]]) else {
                throw compiler.fail(node, "needs a boolean condition and two values of one element type")
            }
            let second = operands[1].shape.reduce(1, *)
            return choices.gathered(shape: shape, offsets: (0..<count).map { condition[offsets[0][$0]] != 0 ? offsets[1][$0] : second + offsets[2][$0] })
        }
        let op = node.op, fmod = node.int("fmod", default: 0) == 1
        if operands.allSatisfy({ $0.integers != nil }) {
            let values = operands.map { $0.integers! }
            return .int64(shape: shape, values: try (0..<count).map { i throws(InferenceError) -> Int64 in
                let x = values.indices.map { values[$0][offsets[$0][i]] }
                guard let result = integer(op, x, fmod: fmod) else { throw compiler.shapeError(node, "\(op) of \(x) has no int64 result") }
                return Int64(result)
            })
        }
        guard let tensors = Optional(operands.compactMap(\.floatTensor)), tensors.count == operands.count else {
            throw compiler.fail(node, "inputs of different element types")
        }
        let results = try (0..<count).map { i throws(InferenceError) -> Float in
            let x = tensors.indices.map { tensors[$0].data[offsets[$0][i]] }
            guard let result = real(op, x) else { throw compiler.fail(node, "\(op) is not defined on float tensors") }
            return result
        }
        let logical = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"].contains(op)
        return logical ? .int64(shape: shape, values: results.map { Int64($0) }) : .float(Tensor(shape: shape, data: results))
    }

    /// BatchNormalization in training mode on a value known at load (NF-Nets' weight
    /// standardisation): each channel (axis 1) by the mean and population variance of its own
    /// values over the other axes, then scaled and shifted; and the running mean and variance as
    /// the operator defines them (input · momentum + the batch's · (1 − momentum)). In doubles.
    private static func batchStatisticsNorm(_ node: Node, _ constants: [Constant?], compiler: Compiler) throws(InferenceError) -> [Constant] {
        let floats = constants.map { $0?.floatTensor }
        guard floats.count == 5, let x = floats[0], let scale = floats[1], let bias = floats[2], let mean = floats[3], let variance = floats[4],
              x.shape.count >= 2 else {
            throw compiler.fail(node, "in training mode needs float input, scale, bias, mean and variance")
        }
        try checkEvaluated(x.shape, node: node, compiler: compiler)
        let (images, channels, inner) = (x.shape[0], x.shape[1], x.shape[2...].reduce(1, *))
        guard [scale, bias, mean, variance].allSatisfy({ $0.count == channels }), images * inner > 0 else {
            throw compiler.shapeError(node, "scale, bias, mean and variance must have one value for each of \(channels) channels of \(x.shape)")
        }
        let epsilon = Double(node.float("epsilon", default: 1e-5)), momentum = Double(node.float("momentum", default: 0.9))
        var y = [Float](repeating: 0, count: x.count), means = [Float](), variances = [Float]()
        for c in 0..<channels {
            let indices: [Int] = (0..<images).flatMap { (n: Int) -> Range<Int> in
                let start = (n * channels + c) * inner
                return start..<(start + inner)
            }
            var sum = 0.0, squares = 0.0
            for i in indices { sum += Double(x.data[i]) }
            let m = sum / Double(indices.count)
            for i in indices {
                let d = Double(x.data[i]) - m
                squares += d * d
            }
            let v = squares / Double(indices.count), factor = Double(scale.data[c]) / (v + epsilon).squareRoot()
            for i in indices { y[i] = Float((Double(x.data[i]) - m) * factor + Double(bias.data[c])) }
            means.append(Float(Double(mean.data[c]) * momentum + m * (1 - momentum)))
            variances.append(Float(Double(variance.data[c]) * momentum + v * (1 - momentum)))
        }
        return [.float(Tensor(shape: x.shape, data: y)), .float(Tensor(shape: [channels], data: means)),
                .float(Tensor(shape: [channels], data: variances))]
    }

    /// Refuses a result (or an input to reduce) over `largestEvaluated` elements before it is allocated.
    private static func checkEvaluated(_ shape: [Int], node: Node, compiler: Compiler) throws(InferenceError) {
        guard let count = ShapeMath.count(shape), count <= largestEvaluated else {
            throw compiler.shapeError(node, "\(shape) is too large to evaluate at load (over \(largestEvaluated) elements)")
        }
    }

    /// One integer operation; nil on overflow, division by zero or an operator without an integer form.
    private static func integer(_ op: String, _ x: [Int], fmod: Bool) -> Int? {
        func truth(_ condition: Bool) -> Int { condition ? 1 : 0 }
        switch op {
        case "Add": return checked(x[0].addingReportingOverflow(x[1]))
        case "Sub": return checked(x[0].subtractingReportingOverflow(x[1]))
        case "Mul": return checked(x[0].multipliedReportingOverflow(by: x[1]))
        case "Div": return x[1] == 0 ? nil : checked(x[0].dividedReportingOverflow(by: x[1]))
        case "Mod":
            guard x[1] != 0, let remainder = checked(x[0].remainderReportingOverflow(dividingBy: x[1])) else { return nil }
            // Without fmod the remainder takes the divisor's sign, as in Python.
            return !fmod && remainder != 0 && (remainder < 0) != (x[1] < 0) ? remainder + x[1] : remainder
        case "Min": return x.min()
        case "Max": return x.max()
        case "Equal": return truth(x[0] == x[1])
        case "Less": return truth(x[0] < x[1])
        case "Greater": return truth(x[0] > x[1])
        case "LessOrEqual": return truth(x[0] <= x[1])
        case "GreaterOrEqual": return truth(x[0] >= x[1])
        case "And": return truth(x[0] != 0 && x[1] != 0)
        case "Or": return truth(x[0] != 0 || x[1] != 0)
        case "Xor": return truth((x[0] != 0) != (x[1] != 0))
        case "Not": return truth(x[0] == 0)
        case "Neg": return checked(0.subtractingReportingOverflow(x[0]))
        case "Abs": return x[0] == .min ? nil : abs(x[0])
        case "Sign": return x[0].signum()
        case "Floor", "Ceil": return x[0]
        default: return nil
        }
    }

    /// One float operation (comparisons give 1 or 0); nil for an operator without a float form.
    private static func real(_ op: String, _ x: [Float]) -> Float? {
        func truth(_ condition: Bool) -> Float { condition ? 1 : 0 }
        switch op {
        case "Add": return x[0] + x[1]
        case "Sub": return x[0] - x[1]
        case "Mul": return x[0] * x[1]
        case "Div": return x[0] / x[1]
        case "Mod": return fmodf(x[0], x[1])
        case "Min": return x.contains(where: \.isNaN) ? .nan : x.min()
        case "Max": return x.contains(where: \.isNaN) ? .nan : x.max()
        case "Equal": return truth(x[0] == x[1])
        case "Less": return truth(x[0] < x[1])
        case "Greater": return truth(x[0] > x[1])
        case "LessOrEqual": return truth(x[0] <= x[1])
        case "GreaterOrEqual": return truth(x[0] >= x[1])
        case "Neg": return -x[0]
        case "Abs": return abs(x[0])
        case "Sign": return x[0] > 0 ? 1 : x[0] < 0 ? -1 : 0
        case "Floor": return x[0].rounded(.down)
        case "Ceil": return x[0].rounded(.up)
        case "Sqrt": return x[0].squareRoot()
        case "Reciprocal": return 1 / x[0]
        default: return nil
        }
    }

    private static func checked(_ result: (partialValue: Int, overflow: Bool)) -> Int? {
        result.overflow ? nil : result.partialValue
    }

    private static func reduce(_ node: Node, _ data: Constant, compiler: Compiler) throws(InferenceError) -> Constant {
        let shape = data.shape
        try checkEvaluated(shape, node: node, compiler: compiler)
        let axes = try ShapeFolding.axesOf(node, compiler: compiler, rank: shape.count)
        let reduced = Set((axes?.isEmpty ?? true) && node.int("noop_with_empty_axes", default: 0) == 0 ? Array(shape.indices) : axes ?? [])
        let kept = shape.enumerated().map { reduced.contains($0.offset) ? 1 : $0.element }
        let output = node.int("keepdims", default: 1) == 1 ? kept : shape.enumerated().filter { !reduced.contains($0.offset) }.map(\.element)
        let keptStrides = strides(of: kept)
        var groups = [[Int]](repeating: [], count: kept.reduce(1, *))
        for (i, group) in Constant.offsets(shape, reading: shape.indices.map { reduced.contains($0) ? 0 : keptStrides[$0] }).enumerated() {
            groups[group].append(i)
        }
        switch data {
        case .int64(_, let values):
            return .int64(shape: output, values: try groups.map { group throws(InferenceError) -> Int64 in
                let members = group.map { Int(values[$0]) }
                var result = node.op == "ReduceProd" ? 1 : 0
                if node.op == "ReduceMin" || node.op == "ReduceMax" {
                    guard let extreme = node.op == "ReduceMin" ? members.min() : members.max() else {
                        throw compiler.shapeError(node, "\(node.op) of an empty set")
                    }
                    return Int64(extreme)
                }
                for member in members {
                    guard let next = integer(node.op == "ReduceProd" ? "Mul" : "Add", [result, member], fmod: false) else {
                        throw compiler.shapeError(node, "\(node.op) overflows int64")
                    }
                    result = next
                }
                return Int64(node.op == "ReduceMean" ? result / max(members.count, 1) : result)
            })
        case .float(let tensor):
            return .float(Tensor(shape: output, data: groups.map { group in
                let members = group.map { tensor.data[$0] }
                switch node.op {
                case "ReduceProd": return members.reduce(1, *)
                case "ReduceMin": return members.min() ?? .infinity
                case "ReduceMax": return members.max() ?? -.infinity
                case "ReduceMean": return members.reduce(0, +) / Float(members.count)
                default: return members.reduce(0, +)
                }
            }))
        }
    }
}
