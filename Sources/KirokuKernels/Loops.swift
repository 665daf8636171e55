/// Loops over float arrays that the engine's unrolled copies and activations run (the portable or
/// the AVX2 build, as KernelSet chooses).
public enum Loops {
    /// target[i] = source[i * stride]; stride 2 through 16-float loads split into their even half
    /// (never reading past source[(count - 1) * stride], the last element asked for).
    public static func gather(_ target: UnsafeMutablePointer<Float>, _ source: UnsafePointer<Float>, _ count: Int, _ stride: Int) {
        var i = 0
        if stride == 2 {
            while i &+ 8 < count {
                let pair = UnsafeRawPointer(source + 2 &* i).loadUnaligned(as: SIMD16<Float>.self)
                UnsafeMutableRawPointer(target + i).storeBytes(of: pair.evenHalf, as: SIMD8<Float>.self)
                i &+= 8
            }
        }
        while i < count {
            target[i] = source[i &* stride]
            i &+= 1
        }
    }

    /// values[i] = min(max(values[i], low), high): Relu, Clip (ReLU6).
    public static func clamp(_ values: UnsafeMutablePointer<Float>, _ count: Int, _ low: Float, _ high: Float) {
        for i in 0..<count { values[i] = min(max(values[i], low), high) }
    }

    /// values[i] *= alpha where negative.
    public static func leakyRelu(_ values: UnsafeMutablePointer<Float>, _ count: Int, _ alpha: Float) {
        for i in 0..<count { values[i] = values[i] < 0 ? values[i] * alpha : values[i] }
    }

    /// values[i] = min(max(alpha * values[i] + beta, 0), 1).
    public static func hardSigmoid(_ values: UnsafeMutablePointer<Float>, _ count: Int, _ alpha: Float, _ beta: Float) {
        for i in 0..<count { values[i] = min(max(alpha * values[i] + beta, 0), 1) }
    }

    /// values[i] *= min(max(values[i] / 6 + 0.5, 0), 1).
    public static func hardSwish(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        for i in 0..<count { values[i] *= min(max(values[i] / 6 + 0.5, 0), 1) }
    }

    /// values[i] = 1 / (1 + e^-x).
    public static func sigmoid(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        mapLanes(values, count, SigmoidLanes())
    }

    /// values[i] = x · sigmoid(alpha · x): Swish (SiLU for alpha 1).
    public static func swish(_ values: UnsafeMutablePointer<Float>, _ count: Int, _ alpha: Float) {
        mapLanes(values, count, SwishLanes(alpha: Vector(repeating: -alpha)))
    }

    /// values[i] = x · (1 + erf(x / √2)) / 2: GELU.
    public static func gelu(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        mapLanes(values, count, GeluLanes())
    }

    /// values[i] = x · sigmoid(2·√(2/π)·(x + 0.044715·x³)): GELU's tanh form.
    public static func geluTanh(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        mapLanes(values, count, GeluTanhLanes())
    }

    /// values[i] = tanh(x), as 2·sigmoid(2x) − 1; near 0, where that loses its relative
    /// precision, as x − x³/3 (relative error under 1e-6 for |x| < 0.05).
    public static func tanh(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        mapLanes(values, count, TanhLanes())
    }

    /// values[i] = erf(x).
    public static func erf(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        mapLanes(values, count, ErfLanes())
    }

    /// values = softmax(values) in place: e^(x - max) eight lanes at a time, then divided by their sum.
    public static func softmax(_ values: UnsafeMutablePointer<Float>, _ count: Int) {
        var largest = -Float.infinity
        for i in 0..<count { largest = max(largest, values[i]) }
        let shift = Vector(repeating: largest)
        mapLanes(values, count, ShiftedExponentialLanes(shift: shift))
        var sum: Float = 0
        for i in 0..<count { sum += values[i] }
        let scale = 1 / sum
        for i in 0..<count { values[i] *= scale }
    }
}

struct SigmoidLanes: LaneFunction {
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { 1 / (1 + exponential(-x)) }
}

struct SwishLanes: LaneFunction {
    /// −alpha in every lane.
    let alpha: Vector
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { x / (1 + exponential(alpha * x)) }
}

struct GeluLanes: LaneFunction {
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { 0.5 * x * (1 + errorFunction(x * 0.70710678118654752)) }
}

struct GeluTanhLanes: LaneFunction {
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { x / (1 + exponential(-1.5957691216057308 * (x + 0.044715 * x * x * x))) }
}

struct TanhLanes: LaneFunction {
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector {
        let small = x * x .< 0.0025
        return (2 / (1 + exponential(-2 * x)) - 1).replacing(with: x - x * x * x / 3, where: small)
    }
}

struct ErfLanes: LaneFunction {
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { errorFunction(x) }
}

struct ShiftedExponentialLanes: LaneFunction {
    let shift: Vector
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { exponential(x - shift) }
}
