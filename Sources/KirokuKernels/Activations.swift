/// The activations computed through a vector exp or erf, a `Vector` at a time: eight lanes in the
/// portable and AVX2 builds, sixteen in the AVX-512 build (KirokuKernelsAVX512, which links this
/// file with VectorMath.swift and the float products: half the instructions a value, Gelu and Sigmoid 1.5x as fast on Zen 4).
public enum Activations {
    /// How many lanes this build's activations compute at a time.
    public static let lanes = Vector.scalarCount

    /// target = softmax(source) over `count` contiguous values (target may be source): the largest,
    /// e^(x - largest) and their sum a `Vector` at a time (eight lanes, sixteen in the AVX-512 build), then each divided by the sum.
    /// Past the whole vectors, a row of at least one vector ends with the vector of its last values
    /// (its lanes before them computed twice, the same values stored twice, left out of the sum): a
    /// vector filled lane by lane cost as much as the rest of a row of 49 (a window's attention).
    public static func softmax(_ source: UnsafePointer<Float>, _ target: UnsafeMutablePointer<Float>, _ count: Int) {
        let input = UnsafeRawPointer(source), output = UnsafeMutableRawPointer(target)
        let lanes = Vector.scalarCount, whole = count & ~(lanes &- 1), rest = count &- whole
        let last = (count &- lanes) &* 4, overlapping = rest > 0 && count >= lanes
        var largestLanes = Vector(repeating: -.infinity)
        var i = 0
        while i < whole {
            let x = input.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)
            largestLanes = largestLanes.replacing(with: x, where: x .> largestLanes)
            i &+= lanes
        }
        if overlapping {
            let x = input.loadUnaligned(fromByteOffset: last, as: Vector.self)
            largestLanes = largestLanes.replacing(with: x, where: x .> largestLanes)
        }
        var largest = largestLane(largestLanes)
        if !overlapping { for j in whole..<count { largest = max(largest, source[j]) } }
        let shift = Vector(repeating: largest)
        // The last vector's exponentials before the whole vectors' (which may overwrite the input).
        let lastValues = overlapping ? exponential(input.loadUnaligned(fromByteOffset: last, as: Vector.self) - shift) : Vector()
        var sums = overlapping ? lastValues.replacing(with: 0, where: laneNumbers .< Vector(repeating: Float(lanes &- rest))) : Vector()
        i = 0
        while i < whole {
            let e = exponential(input.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self) - shift)
            output.storeBytes(of: e, toByteOffset: i &* 4, as: Vector.self)
            sums += e
            i &+= lanes
        }
        if overlapping {
            output.storeBytes(of: lastValues, toByteOffset: last, as: Vector.self)
        } else if rest > 0 {
            var x = shift
            for lane in 0..<rest { x[lane] = source[whole &+ lane] }
            var e = exponential(x - shift)
            for lane in rest..<lanes { e[lane] = 0 }
            for lane in 0..<rest { target[whole &+ lane] = e[lane] }
            sums += e
        }
        let scale = Vector(repeating: 1 / laneSum(sums))
        // The last vector read before the whole vectors are scaled, and stored scaled after them.
        let lastStored = overlapping ? output.loadUnaligned(fromByteOffset: last, as: Vector.self) : Vector()
        i = 0
        while i < whole {
            output.storeBytes(of: output.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self) * scale, toByteOffset: i &* 4, as: Vector.self)
            i &+= lanes
        }
        if overlapping {
            output.storeBytes(of: lastStored * scale, toByteOffset: last, as: Vector.self)
        } else {
            for j in whole..<count { target[j] *= scale[0] }
        }
    }

    /// 0, 1, 2, ... in the lanes of a `Vector`.
    static let laneNumbers = Vector((0..<Vector.scalarCount).map(Float.init))

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
