// A seeded mutation fuzzer for JPEG decoding and preprocessing.
//
//   kiroku-fuzz-image ITERATIONS SEED_DIR... [--seed N] [--current FILE]
//
// Mutants of the JPEGs under the SEED_DIRs go through JPEGDecoder and ImagePreprocessor (to a
// 224x224 input, as the default model's), and every hundredth iteration a random-size image straight
// through preprocessing. Every failure must be a thrown ImageError; a crash ends
// the process with its input left in FILE. Memory is sampled after the first 1,000 executions and
// at the end: growth over 16 MB fails the run (exit 1).
import Foundation
import KirokuFuzzing
import KirokuVision

let (iterations, directories, seed, currentPath) = Mutator.arguments(usage: "kiroku-fuzz-image ITERATIONS SEED_DIR... [--seed N] [--current FILE]")
let seeds = Mutator.seeds(under: directories, extensions: [".jpg", ".jpeg"]).filter { $0.count <= 256 << 10 }
guard !seeds.isEmpty else {
    FileHandle.standardError.write(Data("kiroku-fuzz-image: no JPEG seeds under 256 KB in \(directories.joined(separator: ", "))\n".utf8))
    exit(2)
}
let sidecar = ModelSidecar(
    name: "fuzz", input: .init(name: "input", layout: "NCHW", channelOrder: "RGB", height: 224, width: 224),
    preprocessing: .init(cropFraction: 0.875, resize: "bicubic", mean: [127, 127, 127], std: [128, 128, 128]),
    labels: [], foodClasses: [])
let preprocessor = ImagePreprocessor(sidecar: sidecar)
let decoder = JPEGDecoder(limits: DecodeLimits(maximumPixels: 40_000_000, maximumBytes: 8 << 20))
var mutator = Mutator(seeds: seeds, seed: seed)
var buffer = [Float](repeating: 0, count: preprocessor.floatsPerImage)
var decoded = 0, synthetic = 0, rssAfterWarmUp = 0.0
let start = Date()
for iteration in 0..<iterations {
    if iteration == min(1000, iterations - 1) { rssAfterWarmUp = Mutator.residentMegabytes() }
    let bytes = mutator.input(iteration)
    _ = FileManager.default.createFile(atPath: currentPath, contents: Data(bytes))
    do {
        try buffer.withUnsafeMutableBufferPointer { try preprocessor.prepare(bytes, decoder: decoder, into: $0) }
        decoded += 1
    } catch {
        // A thrown ImageError is the expected outcome for a damaged file.
    }
    // Mutants mostly stop at libjpeg-turbo's first warning, so every hundredth iteration also sends
    // a random-size decoded image (1 to 600 pixels a side) straight through preprocessing.
    if iteration % 100 == 0 {
        let width = Int.random(in: 1...600, using: &mutator.random), height = Int.random(in: 1...600, using: &mutator.random)
        let step = Int.random(in: 1...255, using: &mutator.random)  // a cheap pattern: random bytes would dominate the run
        let image = RGBImage(width: width, height: height, pixels: (0..<(width * height * 3)).map { UInt8(truncatingIfNeeded: $0 &* step) })
        buffer.withUnsafeMutableBufferPointer { preprocessor.write(image, into: $0) }
        synthetic += 1
    }
}
try? FileManager.default.removeItem(atPath: currentPath)
let growth = Mutator.residentMegabytes() - rssAfterWarmUp
print(String(format: "kiroku-fuzz-image: %d executions, 0 crashes (%d decoded, %d random-size images preprocessed), memory growth %.1f MB after warm-up, in %.1f s, seed %llu",
             iterations, decoded, synthetic, growth, Date().timeIntervalSince(start), seed))
if growth > 16 { exit(1) }
