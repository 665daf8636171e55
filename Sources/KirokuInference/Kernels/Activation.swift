import Foundation

/// An elementwise activation: a standalone operator, or fused into a convolution's epilogue.
enum Activation: Equatable {
    case relu
    case clip(min: Float, max: Float)
    case leakyRelu(alpha: Float)
    case sigmoid
    case hardSigmoid(alpha: Float, beta: Float)
    case hardSwish

    /// Applies the activation in place, with `loops` (the chosen build's) where it has one.
    func apply(_ values: UnsafeMutableBufferPointer<Float>, loops: KernelLoops) {
        guard let start = values.baseAddress else { return }
        switch self {
        case .relu: loops.clamp(start, values.count, 0, .infinity)
        case .clip(let low, let high): loops.clamp(start, values.count, low, high)
        case .leakyRelu(let alpha): loops.leakyRelu(start, values.count, alpha)
        case .sigmoid: for i in values.indices { values[i] = 1 / (1 + exp(-values[i])) }
        case .hardSigmoid(let alpha, let beta): loops.hardSigmoid(start, values.count, alpha, beta)
        case .hardSwish: loops.hardSwish(start, values.count)
        }
    }

    /// The range a Relu or Clip clamps to (nil for the others): kernels may clamp in registers.
    var bounds: ClosedRange<Float>? {
        switch self {
        case .relu: 0 ... .infinity
        case .clip(let low, let high): low <= high ? low ... high : nil
        default: nil
        }
    }

    /// The activation a node computes, if it is one (Clip's bounds must be constants).
    static func of(_ node: Node, constants: [String: Constant]) -> Activation? {
        switch node.op {
        case "Relu": return .relu
        case "LeakyRelu": return .leakyRelu(alpha: node.float("alpha", default: 0.01))
        case "Sigmoid": return .sigmoid
        case "HardSigmoid": return .hardSigmoid(alpha: node.float("alpha", default: 0.2), beta: node.float("beta", default: 0.5))
        case "HardSwish": return .hardSwish
        case "Clip":
            func bound(_ index: Int, _ fallback: Float) -> Float? {
                guard let name = node.input(index) else { return fallback }
                guard let value = constants[name]?.floatTensor, value.count == 1 else { return nil }
                return value.data[0]
            }
            guard let low = bound(1, -.greatestFiniteMagnitude), let high = bound(2, .greatestFiniteMagnitude) else { return nil }
            return .clip(min: low, max: high)
        default: return nil
        }
    }
}
