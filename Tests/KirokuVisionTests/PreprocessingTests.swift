import Foundation
import KirokuInference
import KirokuVision
import Testing

@Suite("Preprocessing against the reference recipe")
struct PreprocessingTests {
    @Test("tensors are close to the Python reference, and top-1 agrees with it on at least 95% of real photos")
    func realPhotos() throws {
        let sidecar = try ModelSidecar(model: VisionFixtures.model)
        let preprocessor = ImagePreprocessor(sidecar: sidecar)
        let session = try InferenceSession(model: try Model(contentsOf: VisionFixtures.model), batchSize: 1)
        let decoder = JPEGDecoder()
        let reference = try VisionFixtures.reference()
        var agreements = 0, maxDifference: Float = 0, meanDifferences: [Float] = []
        var disagreements: [String] = []
        for name in try VisionFixtures.photos() {
            let expected = try NumpyFile.read(try VisionFixtures.bytes("reference/\(name.replacingOccurrences(of: ".jpg", with: ".npy"))"))
            var tensor = [Float](repeating: 0, count: preprocessor.floatsPerImage)
            try tensor.withUnsafeMutableBufferPointer { try preprocessor.prepare(try VisionFixtures.bytes("photos/\(name)"), decoder: decoder, into: $0) }
            let differences = zip(tensor, expected.data).map { abs($0 - $1) }
            maxDifference = max(maxDifference, differences.max() ?? 0)
            meanDifferences.append(differences.reduce(0, +) / Float(differences.count))
            let logits = try session.run(Tensor(shape: [1, 3, 224, 224], data: tensor))[0].data
            let top1 = logits.firstIndex(of: logits.max()!)!
            if top1 == reference[name]?.top1 { agreements += 1 } else { disagreements.append("\(name): \(sidecar.labels[top1]) vs \(sidecar.labels[reference[name]?.top1 ?? 0])") }
        }
        let photos = meanDifferences.count
        let meanDifference = meanDifferences.reduce(0, +) / Float(photos)
        print(String(format: "preprocessing vs reference on %d photos: max |diff| %.3f, mean |diff| %.4f (1/128 = 0.0078 is one intensity level); top-1 agreement %d/%d",
                     photos, maxDifference, meanDifference, agreements, photos) + (disagreements.isEmpty ? "" : "; differ: " + disagreements.joined(separator: "; ")))
        #expect(photos >= 15)
        #expect(meanDifference < 0.05, "mean absolute difference \(meanDifference)")
        #expect(Double(agreements) >= 0.95 * Double(photos), "\(disagreements)")
    }

    @Test("--decode full decodes every pixel: on photos large enough for DCT scaling, closer to the reference's full decode than the reduced scale")
    func fullDecode() throws {
        let sidecar = try ModelSidecar(model: VisionFixtures.model)
        let (reduced, full) = (ImagePreprocessor(sidecar: sidecar), ImagePreprocessor(sidecar: sidecar, decodeScale: .full))
        #expect(reduced.minimumShorterSide == 512 && full.minimumShorterSide == .max)
        let decoder = JPEGDecoder()
        var differences: [DecodeScale: Float] = [:], large = 0
        for name in try VisionFixtures.photos() {
            let bytes = try VisionFixtures.bytes("photos/\(name)")
            let header = try decoder.header(bytes)
            guard min(header.width, header.height) >= 1024 else { continue }
            large += 1
            let expected = try NumpyFile.read(try VisionFixtures.bytes("reference/\(name.replacingOccurrences(of: ".jpg", with: ".npy"))"))
            for preprocessor in [reduced, full] {
                var tensor = [Float](repeating: 0, count: preprocessor.floatsPerImage)
                try tensor.withUnsafeMutableBufferPointer { try preprocessor.prepare(bytes, decoder: decoder, into: $0) }
                differences[preprocessor.decodeScale, default: 0] += zip(tensor, expected.data).map { abs($0 - $1) }.reduce(0, +) / Float(tensor.count)
            }
        }
        #expect(large >= 5, "photos of 1024 px or more")
        let (r, f) = (differences[.reduced, default: 0] / Float(large), differences[.full, default: 0] / Float(large))
        print(String(format: "mean |diff| against the reference's full decode on %d large photos: reduced %.4f, full %.4f", large, r, f))
        #expect(f < r, "full decoding is closer to a full-decoding reference: \(f) vs \(r)")
    }

    @Test("a batch is written image by image into one buffer")
    func batch() throws {
        let preprocessor = ImagePreprocessor(sidecar: try ModelSidecar(model: VisionFixtures.model))
        let photos = Array(try VisionFixtures.photos().prefix(2))
        var batch = [Float](repeating: .nan, count: 2 * preprocessor.floatsPerImage)
        let decoder = JPEGDecoder()
        try batch.withUnsafeMutableBufferPointer { buffer in
            for (index, name) in photos.enumerated() {
                let slot = UnsafeMutableBufferPointer(rebasing: buffer[(index * preprocessor.floatsPerImage)..<((index + 1) * preprocessor.floatsPerImage)])
                try preprocessor.prepare(try VisionFixtures.bytes("photos/\(name)"), decoder: decoder, into: slot)
            }
        }
        #expect(!batch.contains { $0.isNaN })
        #expect(batch.allSatisfy { $0 >= -1 && $0 <= 1.0 })
    }

    @Test("classification gives probabilities, labels and a food verdict from the sidecar")
    func classification() throws {
        let sidecar = try ModelSidecar(model: VisionFixtures.model)
        var logits = [Float](repeating: 0, count: 1000)
        logits[963] = 10  // pizza
        let result = sidecar.classify(logits: logits, top: 3)
        #expect(result.top.first?.label == "pizza" && result.top.first?.index == 963)
        #expect(result.food && result.foodScore > 0.9)
        logits[963] = 0
        logits[817] = 10  // sports car
        #expect(!sidecar.classify(logits: logits, top: 1).food)
        #expect(sidecar.foodClasses.count == 47 && sidecar.labels.count == 1000)
    }
}
