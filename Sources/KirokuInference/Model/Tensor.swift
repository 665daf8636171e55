/// A dense float32 tensor in row-major (C) order: the engine's input and output value.
public struct Tensor: Sendable, Equatable {
    /// The dimensions, outermost first.
    public var shape: [Int]
    /// The elements, row-major.
    public var data: [Float]

    /// Creates a tensor; `data.count` must equal the product of `shape`.
    public init(shape: [Int], data: [Float]) {
        precondition(shape.reduce(1, *) == data.count, "tensor data (\(data.count)) does not fill shape \(shape)")
        self.shape = shape
        self.data = data
    }

    /// A tensor of zeros.
    public init(zeros shape: [Int]) {
        self.init(shape: shape, data: [Float](repeating: 0, count: shape.reduce(1, *)))
    }

    /// The number of elements.
    public var count: Int { data.count }

    /// The mean of the squared differences of two equally long value lists (0 for empty ones).
    public static func meanSquaredDifference(_ a: [Float], _ b: [Float]) -> Double {
        precondition(a.count == b.count, "mean squared difference of \(a.count) and \(b.count) values")
        return zip(a, b).reduce(0.0) { $0 + Double($1.0 - $1.1) * Double($1.0 - $1.1) } / Double(Swift.max(a.count, 1))
    }
}

/// A constant known at load time: float weights, or the integer tensors of shape computations
/// (int64; int32 and bool are widened to it).
enum Constant: Equatable {
    case float(Tensor)
    case int64(shape: [Int], values: [Int64])

    var shape: [Int] {
        switch self {
        case .float(let tensor): tensor.shape
        case .int64(let shape, _): shape
        }
    }

    /// The values as integers (for shape arguments: axes, pads, target shapes).
    var integers: [Int]? {
        switch self {
        case .int64(_, let values): values.map { Int($0) }
        case .float: nil
        }
    }

    /// The float tensor, or nil for int64 constants.
    var floatTensor: Tensor? {
        if case .float(let tensor) = self { return tensor }
        return nil
    }

    /// The same values under another shape of as many elements.
    func reshaped(_ shape: [Int]) -> Constant {
        switch self {
        case .float(let tensor): .float(Tensor(shape: shape, data: tensor.data))
        case .int64(_, let values): .int64(shape: shape, values: values)
        }
    }

    /// A tensor of `shape` whose elements are this one's at `offsets` (row-major).
    func gathered(shape: [Int], offsets: [Int]) -> Constant {
        switch self {
        case .float(let tensor): .float(Tensor(shape: shape, data: offsets.map { tensor.data[$0] }))
        case .int64(_, let values): .int64(shape: shape, values: offsets.map { values[$0] })
        }
    }

    /// The tensor with its axes permuted: output axis k is input axis `perm[k]`.
    func transposed(_ perm: [Int]) -> Constant {
        let inputStrides = strides(of: shape), permuted = perm.map { shape[$0] }
        return gathered(shape: permuted, offsets: Self.offsets(permuted, reading: perm.map { inputStrides[$0] }))
    }

    /// For each element of `shape` in row-major order, the offset it reads with `strides` per axis.
    static func offsets(_ shape: [Int], reading strides: [Int]) -> [Int] {
        let own = KirokuInference.strides(of: shape)
        return (0..<shape.reduce(1, *)).map { i in shape.indices.reduce(0) { $0 + i / own[$1] % shape[$1] * strides[$1] } }
    }

    /// The AxisMap applied, filling with `fill`'s first element (zero when nil).
    func mapped(_ map: AxisMap, fill: Constant?) -> Constant {
        switch self {
        case .float(let tensor):
            .float(Tensor(shape: map.resultShape, data: map.apply(tensor.data, fill: fill?.floatTensor?.data.first ?? 0)))
        case .int64(_, let values):
            .int64(shape: map.resultShape, values: map.apply(values, fill: fill?.integers?.first.map { Int64($0) } ?? 0))
        }
    }

    /// The flat values of several constants of one element type, one after another; nil when the types differ.
    static func joined(_ parts: [Constant]) -> Constant? {
        if let tensors = Optional(parts.compactMap(\.floatTensor)), tensors.count == parts.count {
            let data = tensors.flatMap(\.data)
            return .float(Tensor(shape: [data.count], data: data))
        }
        let integers = parts.compactMap(\.integers)
        guard integers.count == parts.count else { return nil }
        let values = integers.flatMap { $0.map { Int64($0) } }
        return .int64(shape: [values.count], values: values)
    }
}
