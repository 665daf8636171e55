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


    /// What QuantizeLinear (scale and zero point in, levels low...high) then DequantizeLinear (scale
    /// and zero point out) make of a float: (clamp(round(x / scaleIn) + zeroIn) − zeroOut) · scaleOut,
    /// halves to even.
    public typealias Rounding = (scaleIn: Float, zeroIn: Float, scaleOut: Float, zeroOut: Float, low: Float, high: Float)

    /// The sum of `count` contiguous values, each through `rounding` first where given: four running
    /// sums of eight lanes (a sequential sum waits on every addition).
    public static func sum(_ values: UnsafePointer<Float>, _ count: Int, _ rounding: Rounding?) -> Float {
        rounding.map { sum(values, count, RoundingLanes($0)) } ?? sum(values, count, IdentityLanes())
    }

    /// The sum of f over `count` contiguous values (the tail through f in lanes of its own).
    @inline(__always)
    private static func sum<F: LaneFunction>(_ values: UnsafePointer<Float>, _ count: Int, _ f: F) -> Float {
        let raw = UnsafeRawPointer(values)
        @inline(__always) func load(_ i: Int) -> Vector { f(raw.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)) }
        var sums = (Vector(), Vector(), Vector(), Vector())
        var i = 0
        while i &+ 32 <= count {
            (sums.0, sums.1, sums.2, sums.3) = (sums.0 + load(i), sums.1 + load(i &+ 8), sums.2 + load(i &+ 16), sums.3 + load(i &+ 24))
            i &+= 32
        }
        while i &+ 8 <= count {
            sums.0 += load(i)
            i &+= 8
        }
        if i < count {
            var tail = Vector()
            for lane in 0..<(count &- i) { tail[lane] = values[i &+ lane] }
            // The padding's lanes hold f(0), which need not be 0: only the tail's lanes are kept.
            let mapped = f(tail)
            for lane in 0..<(count &- i) { sums.1[lane] += mapped[lane] }
        }
        return laneSum((sums.0 + sums.1) + (sums.2 + sums.3))
    }

    /// The mean of `count` contiguous values and 1 / √(variance + epsilon), eight lanes at a time
    /// (two passes: the variance from the differences to the mean).
    public static func moments(_ values: UnsafePointer<Float>, _ count: Int, _ epsilon: Float) -> (mean: Float, inverse: Float) {
        let input = UnsafeRawPointer(values)
        let whole = count & ~7
        var sums = Vector(repeating: 0)
        var i = 0
        while i < whole {
            sums += input.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)
            i &+= 8
        }
        var sum = laneSum(sums)
        for j in whole..<count { sum += values[j] }
        let mean = sum / Float(count), center = Vector(repeating: mean)
        var squares = Vector(repeating: 0)
        i = 0
        while i < whole {
            let d = input.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self) - center
            squares = multiplyAdd(squares, d, d)
            i &+= 8
        }
        var square = laneSum(squares)
        for j in whole..<count { square += (values[j] - mean) * (values[j] - mean) }
        return (mean, 1 / (square / Float(count) + epsilon).squareRoot())
    }

    /// target[i] = (source[i] - mean) · inverse · scale[i] + bias[i] (bias 0 when nil): one
    /// LayerNormalization row (target may be source).
    public static func normalize(_ source: UnsafePointer<Float>, _ target: UnsafeMutablePointer<Float>, _ count: Int,
                                 _ mean: Float, _ inverse: Float, _ scale: UnsafePointer<Float>, _ bias: UnsafePointer<Float>?) {
        let input = UnsafeRawPointer(source), output = UnsafeMutableRawPointer(target)
        let weights = UnsafeRawPointer(scale), shifts = bias.map(UnsafeRawPointer.init)
        let whole = count & ~7, center = Vector(repeating: mean), spread = Vector(repeating: inverse)
        @inline(__always) func scaled(_ i: Int) -> Vector {
            (input.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self) - center) * spread * weights.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)
        }
        var i = 0
        if let shifts {
            while i < whole {
                output.storeBytes(of: scaled(i) + shifts.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self), toByteOffset: i &* 4, as: Vector.self)
                i &+= 8
            }
        } else {
            while i < whole {
                output.storeBytes(of: scaled(i), toByteOffset: i &* 4, as: Vector.self)
                i &+= 8
            }
        }
        for j in whole..<count { target[j] = (source[j] - mean) * inverse * scale[j] + (bias?[j] ?? 0) }
    }
}

struct IdentityLanes: LaneFunction {
    @inline(__always) func callAsFunction(_ x: Vector) -> Vector { x }
}

/// A QuantizeLinear → DequantizeLinear step (Loops.Rounding) in every lane, clamped by selects (the
/// library's pointwiseMin and pointwiseMax are calls, not instructions); within the levels' range
/// ±1, adding and taking away 1.5 · 2^23 rounds to the nearest integer, halves to even.
struct RoundingLanes: LaneFunction {
    let divisor: Vector, zeroIn: Vector, scaleOut: Vector, zeroOut: Vector, low: Vector, high: Vector, below: Vector, above: Vector

    init(_ rounding: Loops.Rounding) {
        (divisor, zeroIn) = (Vector(repeating: rounding.scaleIn), Vector(repeating: rounding.zeroIn))
        (scaleOut, zeroOut) = (Vector(repeating: rounding.scaleOut), Vector(repeating: rounding.zeroOut))
        (low, high) = (Vector(repeating: rounding.low), Vector(repeating: rounding.high))
        (below, above) = (low - zeroIn - 1, high - zeroIn + 1)
    }

    @inline(__always) func callAsFunction(_ x: Vector) -> Vector {
        let scaled = x / divisor, limited = scaled.replacing(with: below, where: scaled .< below)
        let level = (limited.replacing(with: above, where: limited .> above) + 0x1.8p23) - 0x1.8p23 + zeroIn
        let clamped = level.replacing(with: low, where: level .< low)
        return (clamped.replacing(with: high, where: clamped .> high) - zeroOut) * scaleOut
    }
}
