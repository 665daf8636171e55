/// The activations computed through a vector exp or erf, a `Vector` at a time: eight lanes in the
/// portable and AVX2 builds, sixteen in the AVX-512 build (KirokuKernelsAVX512, which links this
/// file with VectorMath.swift and the float products: half the instructions a value, Gelu and Sigmoid 1.5x as fast on Zen 4).
public enum Activations {
    /// How many lanes this build's activations compute at a time.
    public static let lanes = Vector.scalarCount

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
