#if KIROKU_AVX2
/// The channel-blocked layout (NCHW8c) that chains of pointwise and depthwise convolutions keep
/// between them: one image's channels in blocks of 8, each block a plane of positions, each
/// position the block's 8 channels side by side ([C / 8][H * W][8]). A vector is then 8 channels
/// of one position: a pointwise convolution stores whole vectors where NCHW stores a float per
/// channel plane, and a depthwise one reads and writes them with no interleaving or transposes.
/// These move data between NCHW and that layout. Only in the AVX2 build, like the kernels that use it.
public enum ChannelBlocks {
    /// Channels per block: one vector.
    public static let width = 8

    /// Copies `blocks` blocks of channels from NCHW planes of `plane` floats at `planes` (channel c
    /// at planes + c * plane) into the blocked layout at `blocked`.
    public static func fromPlanes(_ planes: UnsafePointer<Float>, plane: Int, blocks: Range<Int>, into blocked: UnsafeMutablePointer<Float>) {
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 16) { rows in
            for b in blocks {
                let source = planes + b &* 8 &* plane, target = blocked + b &* 8 &* plane
                var p = 0
                while p &+ 8 <= plane {
                    for c in 0..<8 { rows[c] = UnsafeRawPointer(source + (c &* plane &+ p)).loadUnaligned(as: Vector.self) }
                    let positions = transpose8x8(rows.baseAddress!)
                    for j in 0..<8 { UnsafeMutableRawPointer(target + (p &+ j) &* 8).storeBytes(of: positions[j], as: Vector.self) }
                    p &+= 8
                }
                for q in p..<plane {
                    for c in 0..<8 { target[q &* 8 &+ c] = source[c &* plane &+ q] }
                }
            }
        }
    }

    /// The inverse: `blocks` blocks from the blocked layout at `blocked` into NCHW planes at `planes`.
    public static func toPlanes(_ blocked: UnsafePointer<Float>, plane: Int, blocks: Range<Int>, into planes: UnsafeMutablePointer<Float>) {
        withUnsafeTemporaryAllocation(of: Vector.self, capacity: 16) { rows in
            for b in blocks {
                let source = blocked + b &* 8 &* plane, target = planes + b &* 8 &* plane
                var p = 0
                while p &+ 8 <= plane {
                    for j in 0..<8 { rows[j] = UnsafeRawPointer(source + (p &+ j) &* 8).loadUnaligned(as: Vector.self) }
                    let channels = transpose8x8(rows.baseAddress!)
                    for c in 0..<8 { UnsafeMutableRawPointer(target + (c &* plane &+ p)).storeBytes(of: channels[c], as: Vector.self) }
                    p &+= 8
                }
                for q in p..<plane {
                    for c in 0..<8 { target[c &* plane &+ q] = source[q &* 8 &+ c] }
                }
            }
        }
    }
}
#endif
