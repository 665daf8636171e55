/// The elementwise loops around the integer operators: floats to centred levels and back (one
/// channel's plane at a time, the levels `stride` apart: positions by channels), and the
/// requantized sum of two quantized values.
public enum LevelLoops {
    /// target[p · stride] = level(source[p] / scale) for p below `count`.
    public static func quantize(_ source: UnsafePointer<Float>, count: Int, scale: Float, bounds: ClosedRange<Int32>,
                                into target: UnsafeMutablePointer<Int16>, stride: Int) {
        var p = 0
        let divisor = SIMD8<Float>(repeating: scale)
        while p &+ 8 <= count {
            let levels = Requantized.levels(UnsafeRawPointer(source + p).loadUnaligned(as: SIMD8<Float>.self) / divisor, bounds: bounds)
            for j in 0..<8 { target[(p &+ j) &* stride] = levels[j] }
            p &+= 8
        }
        for q in p..<count { target[q &* stride] = Requantized.level(source[q] / scale, bounds: bounds) }
    }

    /// target[p] = (source[p · stride] + shift) · scale for p below `count`.
    public static func dequantize(_ source: UnsafePointer<Int16>, stride: Int, count: Int, scale: Float, shift: Float,
                                  into target: UnsafeMutablePointer<Float>) {
        for p in 0..<count { target[p] = (Float(source[p &* stride]) + shift) * scale }
    }

    /// y[i] = level(a[i] · scales.a + b[i] · scales.b) for i below `count`.
    public static func add(_ a: UnsafePointer<Int16>, _ b: UnsafePointer<Int16>, count: Int, scales: (a: Float, b: Float),
                           bounds: ClosedRange<Int32>, into y: UnsafeMutablePointer<Int16>) {
        let (scaleA, scaleB) = (SIMD8<Float>(repeating: scales.a), SIMD8<Float>(repeating: scales.b))
        var i = 0
        while i &+ 8 <= count {
            let x = Requantized.floats(levels: UnsafeRawPointer(a + i).loadUnaligned(as: SIMD8<Int16>.self))
            let z = Requantized.floats(levels: UnsafeRawPointer(b + i).loadUnaligned(as: SIMD8<Int16>.self))
            UnsafeMutableRawPointer(y + i).storeBytes(of: Requantized.levels(x * scaleA + z * scaleB, bounds: bounds), as: SIMD8<Int16>.self)
            i &+= 8
        }
        for j in i..<count { y[j] = Requantized.level(Float(a[j]) * scales.a + Float(b[j]) * scales.b, bounds: bounds) }
    }
}
