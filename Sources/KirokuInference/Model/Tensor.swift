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
}

/// A constant known at load time: float weights, or the int64 shape tensors converters emit.
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
}
