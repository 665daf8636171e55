/// The vector type the kernels compute with and its multiply-add, for the build they are in:
/// the AVX2 build (KIROKU_AVX2) fuses the multiply and add into one FMA; the portable build keeps
/// them apart (on baseline x86-64 a fused multiply-add is a library call per lane).
typealias Vector = SIMD8<Float>

/// sum + a * b.
@inline(__always)
func multiplyAdd(_ sum: Vector, _ a: Vector, _ b: Vector) -> Vector {
    #if KIROKU_AVX2
    sum.addingProduct(a, b)
    #else
    sum + a * b
    #endif
}

/// Independent sums a loop keeps in flight: enough to cover the adder's latency with the registers
/// the build has (16 AVX registers hold 8 sums of 8 floats; SSE needs two registers per sum).
#if KIROKU_AVX2
let independentSums = 8
#else
let independentSums = 4
#endif

/// Which build of the kernels this is (the engine's tests check each set calls the build it names).
#if KIROKU_AVX2
public let kernelBuild = "avx2"
#else
public let kernelBuild = "portable"
#endif

/// Transposes the 8x8 floats in vectors[0..<8] (row i, lane j to row j, lane i) through
/// vectors[8..<16] and returns where the result is. Each round takes the even and the odd
/// lanes of two rows side by side, which rotates the 6 bits of a float's (row, lane) index by
/// one; three rounds swap the row and lane bits. (Measured: twice as fast here as the usual
/// unpack-shuffle-permute sequence written lane by lane, which the compiler does not recognise.)
@inline(__always)
func transpose8x8(_ vectors: UnsafeMutablePointer<Vector>) -> UnsafeMutablePointer<Vector> {
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
