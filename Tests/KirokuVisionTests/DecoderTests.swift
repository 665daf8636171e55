import Foundation
import KirokuInference
import KirokuVision
import Testing

@Suite("JPEG decoding")
struct DecoderTests {
    @Test("damaged and foreign files fail with a kind and a reason", arguments: [
        ("cases/truncated_10.jpg", ImageError.Kind.truncated),
        ("cases/truncated_50.jpg", .truncated),
        ("cases/truncated_90.jpg", .truncated),
        ("cases/random_bytes.jpg", .corrupt),
        ("cases/empty.jpg", .corrupt),
        ("cases/image.png", .unsupported),
        ("cases/huge_header.jpg", .tooLarge),
    ])
    func refused(_ file: String, _ kind: ImageError.Kind) throws {
        let bytes = try VisionFixtures.bytes(file)
        let error = #expect(throws: ImageError.self) { try JPEGDecoder().decode(bytes, minimumShorterSide: 256) }
        #expect(error?.kind == kind, "\(file): \(error?.description ?? "decoded")")
        if kind == .unsupported { #expect(error?.message.contains("unsupported image format: PNG image") == true) }
        if kind == .tooLarge { #expect(error?.message.contains("60000x60000") == true) }
    }

    @Test("one decoder reused across failures gives each file its own error and still decodes good files")
    func reusedAfterFailures() throws {
        let files = ["cases/truncated_10.jpg", "cases/truncated_50.jpg", "cases/random_bytes.jpg", "cases/truncated_90.jpg",
                     "cases/truncated_50.jpg", "cases/baseline.jpg", "cases/truncated_10.jpg", "cases/baseline.jpg"]
        let shared = JPEGDecoder()
        for file in files {
            let bytes = try VisionFixtures.bytes(file)
            let fresh = Result { try JPEGDecoder().decode(bytes, minimumShorterSide: 64) }
            let reused = Result { try shared.decode(bytes, minimumShorterSide: 64) }
            switch (fresh, reused) {
            case (.success(let a), .success(let b)): #expect(a.pixels == b.pixels, "\(file)")
            case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)", "\(file)")
            default: Issue.record("\(file): a fresh decoder gave \(fresh), the reused one \(reused)")
            }
        }
    }

    @Test("the byte limit is checked before decoding")
    func byteLimit() throws {
        let bytes = try VisionFixtures.bytes("cases/baseline.jpg")
        let error = #expect(throws: ImageError.self) {
            try JPEGDecoder(limits: DecodeLimits(maximumPixels: 1 << 30, maximumBytes: 100)).decode(bytes)
        }
        #expect(error?.kind == .tooLarge)
    }

    @Test("grayscale, CMYK, progressive, restart markers and 1x1 decode to RGB", arguments: [
        "cases/grayscale.jpg", "cases/cmyk.jpg", "cases/progressive.jpg", "cases/restart_markers.jpg", "cases/baseline.jpg", "cases/tiny_1x1.jpg",
    ])
    func variants(_ file: String) throws {
        let image = try JPEGDecoder().decode(try VisionFixtures.bytes(file))
        let tiny = file.contains("1x1")
        #expect(image.width == (tiny ? 1 : 64) && image.height == (tiny ? 1 : 48))
        #expect(image.pixels.count == image.width * image.height * 3)
        if !tiny && !file.contains("grayscale") {
            // Colour survived: the cat photo is not grey.
            let spread = stride(from: 0, to: image.pixels.count, by: 3).map { Int(image.pixels[$0]) - Int(image.pixels[$0 + 2]) }
            #expect(spread.map(abs).max()! > 20, "\(file) lost its colour")
        }
    }

    @Test("every EXIF orientation comes out upright, as Pillow's exif_transpose", arguments: Array(1...8))
    func orientation(_ orientation: Int) throws {
        let image = try JPEGDecoder().decode(try VisionFixtures.bytes("cases/orientation_\(orientation).jpg"))
        let upright = try NumpyUInt8.read(try VisionFixtures.bytes("cases/upright/orientation_\(orientation).npy"))
        #expect([image.height, image.width, 3] == upright.shape)
        let difference = zip(image.pixels, upright.values).map { abs(Int($0) - Int($1)) }.max() ?? 255
        #expect(difference <= 1, "orientation \(orientation): max pixel difference \(difference)")
    }

    @Test("large photos are decoded at a reduced DCT scale that still covers the crop")
    func dctScaling() throws {
        let decoder = JPEGDecoder()
        for name in try VisionFixtures.photos() {
            let bytes = try VisionFixtures.bytes("photos/\(name)")
            let header = try decoder.header(bytes)
            let image = try decoder.decode(bytes, minimumShorterSide: 256)
            #expect(min(image.width, image.height) >= min(256, min(header.width, header.height)), "\(name)")
            if min(header.width, header.height) >= 512 {
                #expect(image.width < header.width, "\(name) (\(header.width)x\(header.height)) was decoded at full size")
            }
        }
    }
}

/// A uint8 .npy reader for the orientation references.
enum NumpyUInt8 {
    static func read(_ bytes: [UInt8]) throws -> (shape: [Int], values: [UInt8]) {
        let headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
        let header = String(decoding: bytes[10..<(10 + headerLength)], as: UTF8.self)
        guard header.contains("'|u1'"), let open = header.firstIndex(of: "("), let close = header.firstIndex(of: ")") else {
            throw VisionFixtures.Missing(description: "not a uint8 .npy")
        }
        let shape = header[header.index(after: open)..<close].split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return (shape, Array(bytes[(10 + headerLength)...]))
    }
}
