import CTurboJPEG
import Foundation

/// Limits checked from the header, before any large allocation.
public struct DecodeLimits: Sendable {
    /// The most pixels (width x height) a JPEG may declare.
    public var maximumPixels: Int
    /// The most bytes an image file may have.
    public var maximumBytes: Int

    /// About 100 megapixels and 50 MB.
    public static let standard = DecodeLimits(maximumPixels: 100_000_000, maximumBytes: 50 << 20)

    /// Creates limits.
    public init(maximumPixels: Int, maximumBytes: Int) {
        self.maximumPixels = maximumPixels
        self.maximumBytes = maximumBytes
    }
}

/// JPEG decoding through libjpeg-turbo's TurboJPEG API: the header first (size, limits), then a
/// decode at the smallest DCT scale (1/8 to 1) that still covers what the model needs, so a
/// 12 MP photo is never fully decoded to be shrunk to 224 pixels. RGB out; grayscale and CMYK/YCCK
/// converted; the EXIF orientation applied. Not for concurrent use: one decoder per thread.
///
/// Damaged files: decoding stops at libjpeg-turbo's first warning. A truncated or damaged JPEG
/// would decode with grey or smeared regions, and a classification of half a photo is worse than
/// a clear error, so such files fail (kind `truncated` when the data ends early, else `corrupt`).
public final class JPEGDecoder {
    /// Replaced after a failed call: libjpeg-turbo leaves a handle mid-state after an error, and
    /// the next image would read that state (a header of 0x0 pixels) instead of its own bytes.
    private var handle: tjhandle
    public let limits: DecodeLimits

    /// Creates a decoder with the given limits.
    public init(limits: DecodeLimits = .standard) {
        handle = Self.makeHandle()
        self.limits = limits
    }

    deinit {
        tjDestroy(handle)
    }

    /// The header's facts, read without decoding.
    public struct Header: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public let orientation: ExifOrientation
        /// True for CMYK or YCCK JPEGs (converted to RGB when decoded).
        public let isCMYK: Bool
    }

    /// Reads the header, checking the format and the limits.
    public func header(_ bytes: [UInt8]) throws(ImageError) -> Header {
        let format = ImageFormat(sniffing: bytes)
        switch format {
        case .jpeg: break
        case .empty, .unknown: throw ImageError(.corrupt, "the data is \(format.description)")
        default: throw ImageError(.unsupported, "unsupported image format: \(format.description.dropFirst(2)) (Kiroku decodes JPEG)")
        }
        guard bytes.count <= limits.maximumBytes else {
            throw ImageError(.tooLarge, "the file has \(bytes.count) bytes; the limit is \(limits.maximumBytes)")
        }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let status = bytes.withUnsafeBufferPointer {
            tjDecompressHeader3(handle, $0.baseAddress, UInt(bytes.count), &width, &height, &subsampling, &colorspace)
        }
        guard status == 0 else { throw error("cannot read the JPEG header", bytes) }
        guard width > 0, height > 0 else {
            resetHandle()
            // libjpeg-turbo reports no size when the data ends before the frame header (SOF).
            let hasFrame = zip(bytes, bytes.dropFirst()).contains { $0 == 0xFF && (0xC0...0xCF).contains($1) && $1 != 0xC4 && $1 != 0xC8 && $1 != 0xCC }
            throw hasFrame ? ImageError(.corrupt, "the JPEG header declares \(width)x\(height) pixels")
                           : ImageError(.truncated, "the JPEG ends before its frame header (SOF), after \(bytes.count) bytes")
        }
        let pixels = Int(width) * Int(height)
        guard pixels <= limits.maximumPixels else {
            throw ImageError(.tooLarge, "the JPEG declares \(width)x\(height) = \(pixels) pixels; the limit is \(limits.maximumPixels) (a decompression bomb, or raise the limit)")
        }
        let orientation = bytes.withUnsafeBytes { ExifOrientation(jpeg: $0) }
        let cmyk = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        return Header(width: Int(width), height: Int(height), orientation: orientation, isCMYK: cmyk)
    }

    /// Decodes to RGB, upright, at the smallest DCT scale whose shorter side (after orientation)
    /// is still at least `minimumShorterSide` pixels (the full size when none is that small).
    public func decode(_ bytes: [UInt8], minimumShorterSide: Int = .max) throws(ImageError) -> RGBImage {
        let header = try self.header(bytes)
        let (width, height) = scaledSize(header, minimumShorterSide: minimumShorterSide)
        let cmyk = header.isCMYK
        let channels = cmyk ? 4 : 3
        // libjpeg-turbo writes every byte: no need to zero the buffer first.
        var pixels = [UInt8](unsafeUninitializedCapacity: width * height * channels) { _, count in count = width * height * channels }
        let flags = Int32(TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING)
        let status = bytes.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { target in
                tjDecompress2(handle, source.baseAddress, UInt(bytes.count), target.baseAddress, Int32(width), 0, Int32(height),
                              Int32(cmyk ? TJPF_CMYK.rawValue : TJPF_RGB.rawValue), flags)
            }
        }
        guard status == 0 else { throw error("cannot decode the JPEG", bytes) }
        if cmyk {
            // Adobe-style (inverted) CMYK, as Photoshop writes it: R = C·K/255, and so on.
            var rgb = [UInt8](repeating: 0, count: width * height * 3)
            for i in 0..<(width * height) {
                let k = UInt16(pixels[i * 4 + 3])
                for c in 0..<3 { rgb[i * 3 + c] = UInt8((UInt16(pixels[i * 4 + c]) * k + 127) / 255) }
            }
            pixels = rgb
        }
        return RGBImage(width: width, height: height, pixels: pixels).oriented(header.orientation)
    }

    /// The stored (pre-orientation) size at the chosen DCT scale.
    private func scaledSize(_ header: Header, minimumShorterSide: Int) -> (Int, Int) {
        var count: Int32 = 0
        guard let factors = tjGetScalingFactors(&count) else { return (header.width, header.height) }
        // Smallest first: the first factor whose shorter side still covers the need wins.
        let candidates: [(num: Int, denom: Int)] = (0..<Int(count))
            .map { (num: Int(factors[$0].num), denom: Int(factors[$0].denom)) }
            .filter { $0.num <= $0.denom }
            .sorted { $0.num * $1.denom < $1.num * $0.denom }
        for factor in candidates {
            let w = (header.width * factor.num + factor.denom - 1) / factor.denom
            let h = (header.height * factor.num + factor.denom - 1) / factor.denom
            if min(w, h) >= minimumShorterSide { return (w, h) }
        }
        return (header.width, header.height)
    }

    /// libjpeg-turbo's message, as `truncated` when the data stops short of the end-of-image
    /// marker (a cut-off upload), else `corrupt`.
    private func error(_ what: String, _ bytes: [UInt8]) -> ImageError {
        let message = String(cString: tjGetErrorStr2(handle))
        resetHandle()
        let truncated = message.localizedCaseInsensitiveContains("premature end") || bytes.suffix(2) != [0xFF, 0xD9]
        return ImageError(truncated ? .truncated : .corrupt, "\(what): \(message)")
    }

    private static func makeHandle() -> tjhandle {
        guard let handle = tjInitDecompress() else { fatalError("tjInitDecompress failed: out of memory") }
        return handle
    }

    /// A new handle in place of one a failed call left mid-state.
    private func resetHandle() {
        tjDestroy(handle)
        handle = Self.makeHandle()
    }
}
