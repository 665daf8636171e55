#if KIROKU_AVX2
import _Builtin_intrinsics.intel
#endif

/// A matrix transposed: `rows` x `columns` floats written as `columns` x `rows`.
public enum TransposeTiles {
    /// Rows `range` of `source` (rows x columns, row-major) written as those columns' places in
    /// `target` (columns x rows): target[c · rows + r] = source[r · columns + c]. In the AVX2 build,
    /// blocks of 8x8 through registers (one value at a time took PVT v2's 3136x256 transposes 1 ms
    /// each); edges one value at a time.
    public static func rows(_ range: Range<Int>, of source: UnsafePointer<Float>, rows: Int, columns: Int, into target: UnsafeMutablePointer<Float>) {
        var r = range.lowerBound
        #if KIROKU_AVX2
        while r &+ 8 <= range.upperBound {
            var c = 0
            while c &+ 8 <= columns {
                block(source + (r &* columns &+ c), columns, target + (c &* rows &+ r), rows)
                c &+= 8
            }
            for c in c..<columns {
                for i in r..<(r &+ 8) { target[c &* rows &+ i] = source[i &* columns &+ c] }
            }
            r &+= 8
        }
        #endif
        for c in 0..<columns {
            for i in r..<range.upperBound { target[c &* rows &+ i] = source[i &* columns &+ c] }
        }
    }

    #if KIROKU_AVX2
    /// An 8x8 block: rows `sourceStride` floats apart at `source`, written as columns at `target`
    /// (its rows `targetStride` apart): pairs interleaved, then pairs of pairs, then halves swapped.
    @inline(__always)
    static func block(_ source: UnsafePointer<Float>, _ sourceStride: Int, _ target: UnsafeMutablePointer<Float>, _ targetStride: Int) {
        func row(_ i: Int) -> __m256 { _mm256_loadu_ps(source + i &* sourceStride) }
        func pairs(_ a: __m256, _ b: __m256) -> (__m256, __m256) { (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b)) }
        func quads(_ a: __m256, _ b: __m256) -> (SIMD8<Float>, SIMD8<Float>) {
            let (x, y) = (_mm256_castps_pd(a), _mm256_castps_pd(b))
            return (unsafeBitCast(_mm256_unpacklo_pd(x, y), to: SIMD8<Float>.self), unsafeBitCast(_mm256_unpackhi_pd(x, y), to: SIMD8<Float>.self))
        }
        let (t0, t1) = pairs(row(0), row(1)), (t2, t3) = pairs(row(2), row(3))
        let (t4, t5) = pairs(row(4), row(5)), (t6, t7) = pairs(row(6), row(7))
        // Each u holds one column of rows 0-3 (or 4-7) in its low half and the column 4 on in its high half.
        let (u0, u1) = quads(t0, t2), (u2, u3) = quads(t1, t3), (u4, u5) = quads(t4, t6), (u6, u7) = quads(t5, t7)
        for (column, (top, bottom)) in [(u0, u4), (u1, u5), (u2, u6), (u3, u7)].enumerated() {
            UnsafeMutableRawPointer(target + column &* targetStride).storeBytes(of: SIMD8(lowHalf: top.lowHalf, highHalf: bottom.lowHalf), as: SIMD8<Float>.self)
            UnsafeMutableRawPointer(target + (column &+ 4) &* targetStride)
                .storeBytes(of: SIMD8(lowHalf: top.highHalf, highHalf: bottom.highHalf), as: SIMD8<Float>.self)
        }
    }
    #endif
}
