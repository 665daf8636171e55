#if KIROKU_AVX2
/// The transforms of Winograd's F(4x4, 3x3) over channel-blocked data (ChannelBlocks): a 3x3
/// stride-1 convolution computed 4x4 outputs at a time as 36 products of transformed values
/// (where a direct convolution takes 144 multiply-adds per tile), the transforms' arithmetic
/// vectorised across a block's 8 channels. With d a tile's 6x6 input window, g a channel pair's
/// 3x3 weights and ⊙ the product point by point, the output tile is Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A (at
/// the points 0, ±1, ±2 and infinity); the weights' transform is done once at load, the products
/// between the transforms by PackedProduct (for each of the 36 points, a matrix of tiles by input
/// channels times one of input by output channels). Only in the AVX2 build, as the products.
public enum Winograd {
    /// For each tile t in `tiles` (at row t / tilesAcross, column t % tilesAcross of tiles) and
    /// each input block b < `blocks`: the 6x6 window d of padded block b (`blockFloats` apart, rows
    /// `rowFloats` long, 8 floats a position) from position (4 * row, 4 * column), transformed:
    /// transformed[(ξ * tileCount + t - first) * 8 * blocks + 8b + j] = (Bᵀ d B)[ξ / 6][ξ % 6] for
    /// lane j. The matrix of point ξ then has a row per tile from `first` (a band of `tileCount`
    /// tiles) and a column per input channel.
    public static func transformInput(padded: UnsafePointer<Float>, blocks: Int, blockFloats: Int, rowFloats: Int, tilesAcross: Int,
                                      tiles: Range<Int>, first: Int, tileCount: Int, transformed: UnsafeMutablePointer<Float>) {
        let channels = blocks &* 8, pointBytes = tileCount &* channels &* 4, rowBytes = rowFloats &* 4
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 36) { buffer in
            let columns = buffer.baseAddress!
            for t in tiles {
                let origin = (t / tilesAcross) &* 4 &* rowFloats &+ (t % tilesAcross) &* 32
                for b in 0..<blocks {
                    let window = UnsafeRawPointer(padded + (b &* blockFloats &+ origin))
                    // Bᵀ d: each column of the window, its 6 rows combined.
                    for j in 0..<6 {
                        let at = { (i: Int) in window.loadUnaligned(fromByteOffset: i &* rowBytes &+ j &* 32, as: Vector.self) }
                        let r = inputRows(at(0), at(1), at(2), at(3), at(4), at(5))
                        (columns[j], columns[6 &+ j], columns[12 &+ j]) = (r.0, r.1, r.2)
                        (columns[18 &+ j], columns[24 &+ j], columns[30 &+ j]) = (r.3, r.4, r.5)
                    }
                    // (Bᵀ d) B: each row of that, its 6 columns combined, stored as 6 points.
                    let target = UnsafeMutableRawPointer(transformed + ((t &- first) &* channels &+ b &* 8))
                    for i in 0..<6 {
                        let row = columns + i &* 6
                        let r = inputRows(row[0], row[1], row[2], row[3], row[4], row[5])
                        let at = i &* 6 &* pointBytes
                        target.storeBytes(of: r.0, toByteOffset: at, as: Vector.self)
                        target.storeBytes(of: r.1, toByteOffset: at &+ pointBytes, as: Vector.self)
                        target.storeBytes(of: r.2, toByteOffset: at &+ 2 &* pointBytes, as: Vector.self)
                        target.storeBytes(of: r.3, toByteOffset: at &+ 3 &* pointBytes, as: Vector.self)
                        target.storeBytes(of: r.4, toByteOffset: at &+ 4 &* pointBytes, as: Vector.self)
                        target.storeBytes(of: r.5, toByteOffset: at &+ 5 &* pointBytes, as: Vector.self)
                    }
                }
            }
        }
    }

    /// For each tile t in `tiles` and each output block b in `blocks`: m the 36 points of
    /// products[(ξ * tileCount + t - first) * channels + 8b + j] (`channels` output channels a
    /// row), the tile's outputs Aᵀ m A plus bias[8b + j], plus the residual at the same place (laid
    /// out as the output) if given, clamped to `bounds`, stored at output[b][4 * row + y][4 * column + x][j]
    /// (planes of `size`), those inside the plane only.
    public static func transformOutput(products: UnsafePointer<Float>, channels: Int, tilesAcross: Int, tiles: Range<Int>, first: Int,
                                       tileCount: Int, blocks: Range<Int>, bias: UnsafePointer<Float>, bounds: ClosedRange<Float>,
                                       residual: UnsafePointer<Float>?, size: (h: Int, w: Int), output: UnsafeMutablePointer<Float>) {
        let (low, high) = (Vector(repeating: bounds.lowerBound), Vector(repeating: bounds.upperBound))
        let pointBytes = tileCount &* channels &* 4, blockFloats = size.h &* size.w &* 8
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 24) { buffer in
            let rows = buffer.baseAddress!
            for t in tiles {
                let (top, left) = ((t / tilesAcross) &* 4, (t % tilesAcross) &* 4)
                let (height, width) = (min(4, size.h &- top), min(4, size.w &- left))
                for b in blocks {
                    let points = UnsafeRawPointer(products + ((t &- first) &* channels &+ b &* 8))
                    // Aᵀ m: each column of the points, its 6 rows combined into 4.
                    for j in 0..<6 {
                        let at = { (i: Int) in points.loadUnaligned(fromByteOffset: (i &* 6 &+ j) &* pointBytes, as: Vector.self) }
                        (rows[j], rows[6 &+ j], rows[12 &+ j], rows[18 &+ j]) = outputRows(at(0), at(1), at(2), at(3), at(4), at(5))
                    }
                    let blockBias = UnsafeRawPointer(bias + b &* 8).loadUnaligned(as: Vector.self)
                    // (Aᵀ m) A: each row of that, its 6 columns combined into the tile's 4 outputs.
                    for y in 0..<height {
                        let row = rows + y &* 6
                        let r = outputRows(row[0], row[1], row[2], row[3], row[4], row[5])
                        let at = b &* blockFloats &+ ((top &+ y) &* size.w &+ left) &* 8
                        storeClamped(r.0 + blockBias, at: at, output: output, residual: residual, low: low, high: high)
                        if width > 1 { storeClamped(r.1 + blockBias, at: at &+ 8, output: output, residual: residual, low: low, high: high) }
                        if width > 2 { storeClamped(r.2 + blockBias, at: at &+ 16, output: output, residual: residual, low: low, high: high) }
                        if width > 3 { storeClamped(r.3 + blockBias, at: at &+ 24, output: output, residual: residual, low: low, high: high) }
                    }
                }
            }
        }
    }

    /// Bᵀ applied to 6 values: (4d0 - 5d2 + d4, -4d1 - 4d2 + d3 + d4, 4d1 - 4d2 - d3 + d4,
    /// -2d1 - d2 + 2d3 + d4, 2d1 - d2 - 2d3 + d4, 4d1 - 5d3 + d5).
    @inline(__always)
    static func inputRows(_ d0: Vector, _ d1: Vector, _ d2: Vector, _ d3: Vector, _ d4: Vector, _ d5: Vector)
        -> (Vector, Vector, Vector, Vector, Vector, Vector) {
        let four = Vector(repeating: 4), five = Vector(repeating: 5), two = Vector(repeating: 2)
        let a = d4 - four * d2, b = d3 - four * d1, c = d4 - d2, e = two * (d3 - d1)
        return (four * d0 - five * d2 + d4, a + b, a - b, c + e, c - e, four * d1 - five * d3 + d5)
    }

    /// Aᵀ applied to 6 values: (m0 + m1 + m2 + m3 + m4, m1 - m2 + 2(m3 - m4), m1 + m2 + 4(m3 + m4),
    /// m1 - m2 + 8(m3 - m4) + m5).
    @inline(__always)
    static func outputRows(_ m0: Vector, _ m1: Vector, _ m2: Vector, _ m3: Vector, _ m4: Vector, _ m5: Vector)
        -> (Vector, Vector, Vector, Vector) {
        let sum12 = m1 + m2, difference12 = m1 - m2, sum34 = m3 + m4, difference34 = m3 - m4
        return (m0 + sum12 + sum34, difference12 + Vector(repeating: 2) * difference34, sum12 + Vector(repeating: 4) * sum34,
                difference12 + Vector(repeating: 8) * difference34 + m5)
    }
}
#endif
