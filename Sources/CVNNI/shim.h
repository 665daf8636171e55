// The VNNI instructions the kernels use, as functions: C headers define these intrinsics as macros,
// which Swift does not import. Inlined into KirokuKernelsVNNI (built for CPUs that have them).
#include <immintrin.h>

/// sums + four unsigned-by-signed byte products per int32 lane (vpdpbusd, 256-bit), exact.
static inline __attribute__((always_inline, target("avx512vnni,avx512vl")))
__m256i kiroku_dpbusd256(__m256i sums, __m256i unsignedBytes, __m256i signedBytes) {
    return _mm256_dpbusd_epi32(sums, unsignedBytes, signedBytes);
}

/// sums + four unsigned-by-signed byte products per int32 lane (vpdpbusd, 512-bit), exact.
static inline __attribute__((always_inline, target("avx512vnni,avx512f")))
__m512i kiroku_dpbusd512(__m512i sums, __m512i unsignedBytes, __m512i signedBytes) {
    return _mm512_dpbusd_epi32(sums, unsignedBytes, signedBytes);
}

/// sums + two signed 16-bit products per int32 lane (vpdpwssd, 256-bit), exact. Written as an
/// instruction: LLVM otherwise splits the intrinsic into vpmaddwd and vpaddd for CPUs it does not
/// know to run it fast, doubling the instructions of the depthwise loops.
static inline __attribute__((always_inline, target("avx512vnni,avx512vl")))
__m256i kiroku_dpwssd256(__m256i sums, __m256i a, __m256i b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(sums) : "v"(a), "v"(b));
    return sums;
}

/// sums + two signed 16-bit products per int32 lane (vpdpwssd, 512-bit), exact; an instruction for
/// the reason given above.
static inline __attribute__((always_inline, target("avx512vnni,avx512f")))
__m512i kiroku_dpwssd512(__m512i sums, __m512i a, __m512i b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(sums) : "v"(a), "v"(b));
    return sums;
}
