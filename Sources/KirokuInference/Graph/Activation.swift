import Foundation

/// An elementwise activation: a standalone operator, or fused into a convolution's epilogue.
enum Activation: Equatable {
    case relu
    case clip(min: Float, max: Float)
    case leakyRelu(alpha: Float)
    case sigmoid
    case hardSigmoid(alpha: Float, beta: Float)
    case hardSwish
    /// Any other function of one value (GELU, Erf, Tanh, Exp, Sqrt, ...).
    case function(ElementFunction)

    /// The range a Relu or Clip clamps to (nil for the others): kernels may clamp in registers.
    var bounds: ClosedRange<Float>? {
        switch self {
        case .relu: 0 ... .infinity
        case .clip(let low, let high): low <= high ? low ... high : nil
        default: nil
        }
    }

    /// The operators that are activations.
    static let operators: Set<String> = Set(["Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Gelu", "Elu", "Swish"])
        .union(ElementFunction.byOperator.keys)

    /// The activation a node computes, if it is one (Clip's bounds must be constants).
    static func of(_ node: Node, constants: [String: Constant]) -> Activation? {
        switch node.op {
        case "Relu": return .relu
        case "LeakyRelu": return .leakyRelu(alpha: node.float("alpha", default: 0.01))
        case "Sigmoid": return .sigmoid
        case "HardSigmoid": return .hardSigmoid(alpha: node.float("alpha", default: 0.2), beta: node.float("beta", default: 0.5))
        case "HardSwish": return .hardSwish
        case "Gelu": return .function(node.string("approximate", default: "none") == "tanh" ? .geluTanh : .gelu)
        case "Elu": return .function(.elu(alpha: node.float("alpha", default: 1)))
        case "Swish": return .function(.swish(alpha: node.float("alpha", default: 1)))
        case IROperator.quantizeDequantize:
            guard let step = node.floats(IRAttribute.quantizeDequantize).flatMap(QuantizationStep.init(parameters:)) else { return nil }
            return .function(.quantizeDequantize(step))
        case _ where ElementFunction.byOperator[node.op] != nil: return .function(ElementFunction.byOperator[node.op]!)
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

/// A function of one float that has no loop of its own in the kernel builds.
enum ElementFunction: Equatable {
    case gelu, geluTanh, erf, tanh, exp, log, negate, absolute, squareRoot, reciprocal, floor, ceil, softplus
    /// Rounding half to even, and -1, 0 or 1 by sign (NaN stays NaN in both).
    case round, sign
    /// The trigonometric and hyperbolic functions (positional encodings computed in the graph use Sin and Cos).
    case sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh
    case elu(alpha: Float)
    /// x · sigmoid(αx) (SiLU for α = 1): EfficientNet's activation.
    case swish(alpha: Float)
    /// A QuantizeLinear → DequantizeLinear pair: x rounded to an 8-bit level and back.
    case quantizeDequantize(QuantizationStep)

    /// The parameterless functions by ONNX operator.
    static let byOperator: [String: ElementFunction] = [
        "Erf": .erf, "Tanh": .tanh, "Exp": .exp, "Log": .log, "Neg": .negate, "Abs": .absolute, "Sqrt": .squareRoot,
        "Reciprocal": .reciprocal, "Floor": .floor, "Ceil": .ceil, "Softplus": .softplus, "Round": .round, "Sign": .sign,
        "Sin": .sin, "Cos": .cos, "Tan": .tan, "Asin": .asin, "Acos": .acos, "Atan": .atan,
        "Sinh": .sinh, "Cosh": .cosh, "Asinh": .asinh, "Acosh": .acosh, "Atanh": .atanh,
    ]

    @inline(__always)
    func callAsFunction(_ x: Float) -> Float {
        switch self {
        case .gelu: 0.5 * x * (1 + erff(x * 0.70710678118654752))
        case .geluTanh: 0.5 * x * (1 + tanhf(0.79788456080286536 * (x + 0.044715 * x * x * x)))
        case .erf: erff(x)
        case .tanh: tanhf(x)
        case .exp: expf(x)
        case .log: logf(x)
        case .negate: -x
        case .absolute: abs(x)
        case .squareRoot: x.squareRoot()
        case .reciprocal: 1 / x
        case .floor: x.rounded(.down)
        case .ceil: x.rounded(.up)
        case .softplus: x > 20 ? x : log1pf(expf(x))
        case .round: x.rounded(.toNearestOrEven)
        case .sign: x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x
        case .sin: sinf(x)
        case .cos: cosf(x)
        case .tan: tanf(x)
        case .asin: asinf(x)
        case .acos: acosf(x)
        case .atan: atanf(x)
        case .sinh: sinhf(x)
        case .cosh: coshf(x)
        case .asinh: asinhf(x)
        case .acosh: acoshf(x)
        case .atanh: atanhf(x)
        case .elu(let alpha): x >= 0 ? x : alpha * (expf(x) - 1)
        case .swish(let alpha): x / (1 + expf(-alpha * x))
        case .quantizeDequantize(let step): step(x)
        }
    }
}
