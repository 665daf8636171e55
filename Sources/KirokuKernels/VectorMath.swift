/// The vector type the kernels compute with and its multiply-add, for the build they are in:
/// the AVX2 build (KIROKU_AVX2) fuses the multiply and add into one FMA; the portable build keeps
/// them apart (on baseline x86-64 a fused multiply-add is a library call per lane); the AVX-512
/// build (KIROKU_AVX512: this file and Activations.swift only) computes sixteen lanes at a time,
/// and so does the VNNI build's e^x (the integer kernels' gates, 16 channels at once).
#if KIROKU_AVX512 || KIROKU_VNNI
typealias Vector = SIMD16<Float>
#else
typealias Vector = SIMD8<Float>
#endif

/// sum + a * b.
@inline(__always)
func multiplyAdd(_ sum: Vector, _ a: Vector, _ b: Vector) -> Vector {
    #if KIROKU_AVX2
    sum.addingProduct(a, b)
    #else
    sum + a * b
    #endif
}

#if KIROKU_AVX512
/// Sixteen floats, a row of a tile 16 wide (DirectConvolution, PackedProduct, a pair of channel
/// blocks): one register in the AVX-512 build, two halves elsewhere.
typealias Sixteen = SIMD16<Float>

extension SIMD16 where Scalar == Float {
    /// The first eight lanes (a row's first channel block).
    @inline(__always) var low: SIMD8<Float> { lowHalf }
    /// The last eight lanes.
    @inline(__always) var high: SIMD8<Float> { highHalf }
}

/// sum + a * b, eight lanes (the channel blocks' lone-block loops in the AVX-512 build).
@inline(__always)
func multiplyAdd(_ sum: SIMD8<Float>, _ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> { sum.addingProduct(a, b) }
#elseif KIROKU_AVX2
/// Sixteen floats, a row of a tile 16 wide (DirectConvolution, PackedProduct, a pair of channel
/// blocks): two 8-lane halves in this build, one register in the AVX-512 build.
struct Sixteen {
    var low, high: SIMD8<Float>

    @inline(__always) init(repeating value: Float) { (low, high) = (SIMD8(repeating: value), SIMD8(repeating: value)) }
    @inline(__always) init() { self.init(repeating: 0) }
    @inline(__always) init(lowHalf: SIMD8<Float>, highHalf: SIMD8<Float>) { (low, high) = (lowHalf, highHalf) }

    @inline(__always) subscript(lane: Int) -> Float { lane < 8 ? low[lane] : high[lane &- 8] }

    @inline(__always) static func += (sum: inout Sixteen, other: Sixteen) { sum.low += other.low; sum.high += other.high }
}
#endif

#if KIROKU_AVX2
/// Eight floats: one position of a channel block (ChannelBlocks), in every build.
typealias BlockVector = SIMD8<Float>

/// sum + s * x in each of sixteen lanes.
@inline(__always)
func multiplyAdd(_ sum: Sixteen, _ s: Float, _ x: Sixteen) -> Sixteen {
    #if KIROKU_AVX512
    sum.addingProduct(Sixteen(repeating: s), x)
    #else
    Sixteen(lowHalf: sum.low.addingProduct(SIMD8(repeating: s), x.low), highHalf: sum.high.addingProduct(SIMD8(repeating: s), x.high))
    #endif
}

/// `value` clamped to low...high lane by lane. Transparent: inlined where written (as
/// `@inline(__always)` it stayed a call in PackedProduct's AVX2 build, 18% of Winograd's time).
@_transparent
func clamped(_ value: Sixteen, _ low: Sixteen, _ high: Sixteen) -> Sixteen {
    #if KIROKU_AVX512
    value.replacing(with: low, where: value .< low).replacing(with: high, where: value .> high)
    #else
    Sixteen(lowHalf: value.low.replacing(with: low.low, where: value.low .< low.low).replacing(with: high.low, where: value.low .> high.low),
            highHalf: value.high.replacing(with: low.high, where: value.high .< low.high)
                .replacing(with: high.high, where: value.high .> high.high))
    #endif
}

extension UnsafeRawPointer {
    /// The sixteen floats at self + offset.
    @inline(__always)
    func loadSixteen(fromByteOffset offset: Int = 0) -> Sixteen {
        #if KIROKU_AVX512
        loadUnaligned(fromByteOffset: offset, as: Sixteen.self)
        #else
        Sixteen(lowHalf: loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self),
                highHalf: loadUnaligned(fromByteOffset: offset &+ 32, as: SIMD8<Float>.self))
        #endif
    }
}

extension UnsafeMutableRawPointer {
    /// Stores sixteen floats at self + offset.
    @inline(__always)
    func storeSixteen(_ value: Sixteen, toByteOffset offset: Int = 0) {
        #if KIROKU_AVX512
        storeBytes(of: value, toByteOffset: offset, as: Sixteen.self)
        #else
        storeBytes(of: value.low, toByteOffset: offset, as: SIMD8<Float>.self)
        storeBytes(of: value.high, toByteOffset: offset &+ 32, as: SIMD8<Float>.self)
        #endif
    }
}
#endif

/// Independent sums a loop keeps in flight: enough to cover the adder's latency with the registers
/// the build has (16 AVX registers hold 8 sums of 8 floats; SSE needs two registers per sum).
#if KIROKU_AVX2
let independentSums = 8
#else
let independentSums = 4
#endif

/// Which build of the kernels this is (the engine's tests check each set calls the build it names;
/// the VNNI build, which links this file for its vector math, names itself by ByteGemm.instructions).
#if KIROKU_AVX512
public let kernelBuild = "avx512"
#elseif KIROKU_AVX2 && !KIROKU_VNNI
public let kernelBuild = "avx2"
#elseif !KIROKU_AVX2
public let kernelBuild = "portable"
#endif

#if !KIROKU_AVX512
/// Transposes the 8x8 floats in vectors[0..<8] (row i, lane j to row j, lane i) through
/// vectors[8..<16] and returns where the result is. Each round takes the even and the odd
/// lanes of two rows side by side, which rotates the 6 bits of a float's (row, lane) index by
/// one; three rounds swap the row and lane bits. (Measured: twice as fast here as the usual
/// unpack-shuffle-permute sequence written lane by lane, which the compiler does not recognise.)
@inline(__always)
func transpose8x8(_ vectors: UnsafeMutablePointer<SIMD8<Float>>) -> UnsafeMutablePointer<SIMD8<Float>> {
    var (from, to) = (vectors, vectors + 8)
    for _ in 0..<3 {
        for i in 0..<4 {
            let pair = SIMD16<Float>(lowHalf: from[2 &* i], highHalf: from[2 &* i &+ 1])
            to[i] = pair.evenHalf
            to[4 &+ i] = pair.oddHalf
        }
        swap(&from, &to)
    }
    return from
}
#endif

/// The largest lane of `v`, by halves (the library's max() compared lane after lane).
@inline(__always)
func largestLane(_ v: Vector) -> Float {
    #if KIROKU_AVX512 || KIROKU_VNNI
    let eight = v.lowHalf.replacing(with: v.highHalf, where: v.highHalf .> v.lowHalf)
    #else
    let eight = v
    #endif
    let four = eight.lowHalf.replacing(with: eight.highHalf, where: eight.highHalf .> eight.lowHalf)
    let two = four.lowHalf.replacing(with: four.highHalf, where: four.highHalf .> four.lowHalf)
    return two[1] > two[0] ? two[1] : two[0]
}

/// The sum of the lanes of `v`, by halves (the library's sum() added lane after lane).
@inline(__always)
func laneSum(_ v: Vector) -> Float {
    #if KIROKU_AVX512 || KIROKU_VNNI
    let eight = v.lowHalf + v.highHalf
    #else
    let eight = v
    #endif
    let four = eight.lowHalf + eight.highHalf, two = four.lowHalf + four.highHalf
    return two[0] + two[1]
}

/// e^x in every lane: Cephes' expf polynomial (relative error about 1e-7); the power of two from a
/// float addition that rounds x·log2(e) to an integer in the low mantissa bits. With `everyBuild`,
/// its multiply-adds are fused in every build, so every build gives the same bits (the portable
/// build then calls the library per lane: slow, but that build runs where AVX2 is missing).
@inline(__always)
func exponential(_ value: Vector, everyBuild: Bool = false) -> Vector {
    @inline(__always) func step(_ sum: Vector, _ a: Vector, _ b: Vector) -> Vector { everyBuild ? sum.addingProduct(a, b) : multiplyAdd(sum, a, b) }
    // Clamped by selects (the library's pointwiseMin and pointwiseMax are calls here, not instructions).
    let upper = Vector(repeating: 88.3), lower = Vector(repeating: -87.3)
    let high = value.replacing(with: upper, where: value .> upper), x = high.replacing(with: lower, where: high .< lower)
    // Each step a multiply-add: x·log2(e) rounded once, r = x - n·ln 2 in two parts (Cody and Waite).
    let shifted = step(Vector(repeating: 12582912), x, Vector(repeating: 1.44269504088896341))  // 1.5 · 2^23
    let n = shifted - 12582912
    let r = step(step(x, n, Vector(repeating: -0.693359375)), n, Vector(repeating: 2.12194440e-4))
    var p = Vector(repeating: 1.9875691500e-4)
    p = step(Vector(repeating: 1.3981999507e-3), p, r)
    p = step(Vector(repeating: 8.3334519073e-3), p, r)
    p = step(Vector(repeating: 4.1665795894e-2), p, r)
    p = step(Vector(repeating: 1.6666665459e-1), p, r)
    p = step(Vector(repeating: 5.0000001201e-1), p, r)
    let power = (unsafeBitCast(shifted, to: Vector.MaskStorage.self) &- (0x4B40_0000 &- 127)) &<< 23
    return (step(r, p, r * r) + 1) * unsafeBitCast(power, to: Vector.self)
}

/// erf(x) in every lane: Abramowitz and Stegun 7.1.26 (absolute error at most 1.5e-7).
@inline(__always)
func errorFunction(_ x: Vector) -> Vector {
    let a = x.replacing(with: -x, where: x .< 0), t = 1 / (1 + 0.3275911 * a)
    var p = Vector(repeating: 1.061405429)
    p = multiplyAdd(Vector(repeating: -1.453152027), p, t)
    p = multiplyAdd(Vector(repeating: 1.421413741), p, t)
    p = multiplyAdd(Vector(repeating: -0.284496736), p, t)
    p = multiplyAdd(Vector(repeating: 0.254829592), p, t)
    let magnitude = 1 - p * t * exponential(-a * a)
    return magnitude.replacing(with: -magnitude, where: x .< 0)
}

/// A function of a vector's lanes that `mapLanes` applies: a type, not a closure, so that each loop is
/// specialised for it and the function inlined (a closure was called once per vector, its SIMD8
/// split into two halves and the upper register state cleared on each call: Sigmoid over 1.2 M
/// floats took 4 times ONNX Runtime's time).
protocol LaneFunction {
    func callAsFunction(_ x: Vector) -> Vector
}

/// values[i] = f(values[i]) a vector at a time; the tail through the same lanes, padded.
@inline(__always)
func mapLanes<F: LaneFunction>(_ values: UnsafeMutablePointer<Float>, _ count: Int, _ f: F) {
    let raw = UnsafeMutableRawPointer(values)
    var i = 0
    while i &+ Vector.scalarCount <= count {
        raw.storeBytes(of: f(raw.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)), toByteOffset: i &* 4, as: Vector.self)
        i &+= Vector.scalarCount
    }
    guard i < count else { return }
    var x = Vector(repeating: 0)
    for lane in 0..<(count &- i) { x[lane] = values[i &+ lane] }
    let y = f(x)
    for lane in 0..<(count &- i) { values[i &+ lane] = y[lane] }
}
