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
