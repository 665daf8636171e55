/// An 8-bit RGB image, pixels interleaved row by row.
public struct RGBImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// width * height * 3 bytes: R, G, B for each pixel, row-major.
    public var pixels: [UInt8]

    /// Creates an image; `pixels` must hold width * height * 3 bytes.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 3, "RGB data does not fill \(width)x\(height)")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The image as it should be seen, given its EXIF orientation (1 to 8).
    public func oriented(_ orientation: ExifOrientation) -> RGBImage {
        guard orientation != .up else { return self }
        let swapped = orientation.swapsAxes
        let (outWidth, outHeight) = swapped ? (height, width) : (width, height)
        var out = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        let (sx, sy) = orientation.source(x: x, y: y, width: outWidth, height: outHeight)
                        let from = (sy * width + sx) * 3, to = (y * outWidth + x) * 3
                        target[to] = source[from]
                        target[to + 1] = source[from + 1]
                        target[to + 2] = source[from + 2]
                    }
                }
            }
        }
        return RGBImage(width: outWidth, height: outHeight, pixels: out)
    }
}

/// EXIF orientation (tag 0x0112): how the stored pixels must be turned to be seen upright.
public enum ExifOrientation: Int, Sendable, CaseIterable {
    case up = 1, upMirrored, down, downMirrored, leftMirrored, right, rightMirrored, left

    /// True for the orientations that exchange width and height (5 to 8).
    public var swapsAxes: Bool { rawValue >= 5 }

    /// For displayed pixel (x, y) of a width x height result, the stored pixel to read.
    func source(x: Int, y: Int, width: Int, height: Int) -> (Int, Int) {
        switch self {
        case .up: (x, y)
        case .upMirrored: (width - 1 - x, y)
        case .down: (width - 1 - x, height - 1 - y)
        case .downMirrored: (x, height - 1 - y)
        case .leftMirrored: (y, x)                                  // transpose
        case .right: (y, width - 1 - x)                             // stored rotated 90° counter-clockwise
        case .rightMirrored: (height - 1 - y, width - 1 - x)        // transverse
        case .left: (height - 1 - y, x)                             // stored rotated 90° clockwise
        }
    }

    /// The orientation in a JPEG's APP1 Exif segment, or .up when there is none or it is unreadable.
    public init(jpeg bytes: UnsafeRawBufferPointer) {
        self = Self.find(in: bytes) ?? .up
    }

    private static func find(in bytes: UnsafeRawBufferPointer) -> ExifOrientation? {
        var offset = 2  // after SOI
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            if marker == 0xDA || marker == 0xD9 { return nil }  // start of scan: no more metadata
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= 2, offset + 2 + length <= bytes.count else { return nil }
            let segment = offset + 4
            if marker == 0xE1, length >= 16, bytes[segment..<(segment + 6)].elementsEqual([0x45, 0x78, 0x69, 0x66, 0, 0]) {
                return tiffOrientation(UnsafeRawBufferPointer(rebasing: bytes[(segment + 6)..<(offset + 2 + length)]))
            }
            offset += 2 + length
        }
        return nil
    }

    private static func tiffOrientation(_ tiff: UnsafeRawBufferPointer) -> ExifOrientation? {
        guard tiff.count >= 8 else { return nil }
        let little = tiff[0] == 0x49 && tiff[1] == 0x49
        guard little || (tiff[0] == 0x4D && tiff[1] == 0x4D) else { return nil }
        func read(_ at: Int, _ size: Int) -> Int? {
            guard at >= 0, at + size <= tiff.count else { return nil }
            return (0..<size).reduce(0) { value, i in
                value | Int(tiff[at + i]) << (8 * (little ? i : size - 1 - i))
            }
        }
        guard let ifd = read(4, 4), let entries = read(ifd, 2) else { return nil }
        for entry in 0..<min(entries, 512) {
            let at = ifd + 2 + entry * 12
            guard let tag = read(at, 2) else { return nil }
            if tag == 0x0112, let value = read(at + 8, 2) { return ExifOrientation(rawValue: value) }
        }
        return nil
    }
}
