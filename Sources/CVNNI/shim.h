// The VNNI instructions the kernels use, as functions: C headers define these intrinsics as macros,
// which Swift does not import. Inlined into KirokuKernelsVNNI (built for CPUs that have them).
#include <immintrin.h>

/// sums + four unsigned-by-signed byte products per int32 lane (vpdpbusd, 256-bit), exact.
static inline __attribute__((always_inline, target("avx512vnni,avx512vl")))
__m256i kiroku_dpbusd256(__m256i sums, __m256i unsignedBytes, __m256i signedBytes) {
    return _mm256_dpbusd_epi32(sums, unsignedBytes, signedBytes);
}
