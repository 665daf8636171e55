import Foundation

/// What a file's first bytes say it is.
public enum ImageFormat: Equatable, Sendable {
    case jpeg
    case png
    case gif
    case webp
    case bmp
    case tiff
    case heif
    case pdf
    case empty
    /// Anything else; `head` holds the first bytes in hex for the message.
    case unknown(head: String)

    /// Recognises the format from the leading bytes (the file signature).
    public init<Bytes: Collection>(sniffing bytes: Bytes) where Bytes.Element == UInt8 {
        let head = Array(bytes.prefix(12))
        func starts(_ signature: [UInt8]) -> Bool { head.starts(with: signature) }
        if head.isEmpty { self = .empty }
        else if starts([0xFF, 0xD8, 0xFF]) { self = .jpeg }
        else if starts([0x89, 0x50, 0x4E, 0x47]) { self = .png }
        else if starts([0x47, 0x49, 0x46, 0x38]) { self = .gif }
        else if starts([0x42, 0x4D]) { self = .bmp }
        else if starts([0x25, 0x50, 0x44, 0x46]) { self = .pdf }
        else if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { self = .tiff }
        else if head.count >= 12, head[0..<4].elementsEqual("RIFF".utf8), head[8..<12].elementsEqual("WEBP".utf8) { self = .webp }
        else if head.count >= 12, head[4..<8].elementsEqual("ftyp".utf8) { self = .heif }
        else { self = .unknown(head: head.prefix(8).map { String(format: "%02X", $0) }.joined(separator: " ")) }
    }

    /// The format in words: "a PNG image", "an empty file", "bytes starting FF 00 ...".
    public var description: String {
        switch self {
        case .jpeg: "a JPEG image"
        case .png: "a PNG image"
        case .gif: "a GIF image"
        case .webp: "a WebP image"
        case .bmp: "a BMP image"
        case .tiff: "a TIFF image"
        case .heif: "an HEIF/HEIC or MP4 file"
        case .pdf: "a PDF document"
        case .empty: "an empty file"
        case .unknown(let head): "not an image format Kiroku knows (it starts with \(head))"
        }
    }
}
