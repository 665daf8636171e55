// A seeded mutation fuzzer for the model loader, compiler and kernels.
//
//   kiroku-fuzz-model ITERATIONS SEED_DIR... [--seed N] [--current FILE]
//
// Each iteration takes a seed model (any .onnx under the SEED_DIRs), applies one to four random
// mutations, and feeds it to Model(serialized:), then InferenceSession, then one run on zeros.
// Every error must be a thrown InferenceError; a crash ends the process, and FILE (written before
// each attempt, default .build/fuzz-current.onnx) holds the input that caused it. Deterministic
// for a given --seed.
import Foundation
import KirokuInference

struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The fuzzing loop: seeds, a deterministic random source, and the mutations.
struct ModelFuzzer {
    let seeds: [[UInt8]]
    var random: SplitMix64

    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: bytes[position] ^= 1 << UInt8.random(in: 0..<8, using: &random)                 // flip a bit
            case 1: bytes[position] = [0x00, 0x01, 0x7F, 0x80, 0xFF].randomElement(using: &random)!  // interesting byte
            case 2: bytes[position] = UInt8.random(in: 0...255, using: &random)                       // random byte
            case 3: bytes.removeSubrange(position...)                                                 // truncate
            case 4:                                                                                   // duplicate a chunk
                let end = min(bytes.count, position + Int.random(in: 1...64, using: &random))
                bytes.insert(contentsOf: Array(bytes[position..<end]), at: Int.random(in: 0...bytes.count, using: &random))
            case 5:                                                                                   // huge varint
                bytes.insert(contentsOf: [UInt8](repeating: 0xFF, count: Int.random(in: 1...10, using: &random)), at: position)
            default:                                                                                  // splice another seed
                let other = seeds.randomElement(using: &random)!
                let start = Int.random(in: 0..<other.count, using: &random)
                bytes.replaceSubrange(position..<min(bytes.count, position + 32), with: other[start..<min(other.count, start + 32)])
            }
        }
        return bytes
    }

    /// Feeds `iterations` inputs through load, compile and run; returns (parsed, compiled, ran).
    mutating func run(iterations: Int, currentPath: String) -> (Int, Int, Int) {
        var parsed = 0, compiled = 0, ran = 0
        for iteration in 0..<iterations {
            let bytes = iteration < seeds.count ? seeds[iteration] : mutate(seeds.randomElement(using: &random)!)
            _ = FileManager.default.createFile(atPath: currentPath, contents: Data(bytes))
            do {
                let model = try Model(serialized: Data(bytes), name: "fuzz-\(iteration)")
                parsed += 1
                let session = try InferenceSession(model: model, threads: 1)
                compiled += 1
                if session.inputShapes.allSatisfy({ $0.reduce(1, *) <= 1 << 20 }) {
                    _ = try session.run(session.inputShapes.map { Tensor(zeros: $0) })
                    ran += 1
                }
            } catch {
                // A thrown InferenceError is the expected outcome for a broken model.
            }
        }
        return (parsed, compiled, ran)
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, in arguments: inout [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(index...(index + 1)) }
    return arguments[index + 1]
}
let seed = option("--seed", in: &arguments).flatMap(UInt64.init) ?? 20_261_122
let currentPath = option("--current", in: &arguments) ?? ".build/fuzz-current.onnx"
guard let iterations = arguments.first.flatMap(Int.init), arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: kiroku-fuzz-model ITERATIONS SEED_DIR... [--seed N] [--current FILE]\n".utf8))
    exit(2)
}

var seeds: [[UInt8]] = []
for directory in arguments.dropFirst() {
    let enumerator = FileManager.default.enumerator(atPath: directory)
    while let path = enumerator?.nextObject() as? String {
        guard path.hasSuffix(".onnx"), let data = FileManager.default.contents(atPath: directory + "/" + path), !data.isEmpty else { continue }
        seeds.append(Array(data))
    }
}
guard !seeds.isEmpty else {
    FileHandle.standardError.write(Data("kiroku-fuzz-model: no .onnx seeds under \(arguments.dropFirst().joined(separator: ", "))\n".utf8))
    exit(2)
}

var fuzzer = ModelFuzzer(seeds: seeds, random: SplitMix64(state: seed))
let start = Date()
let (parsed, compiled, ran) = fuzzer.run(iterations: iterations, currentPath: currentPath)
try? FileManager.default.removeItem(atPath: currentPath)
print(String(format: "kiroku-fuzz-model: %d executions, 0 crashes (%d parsed, %d compiled, %d ran) in %.1f s, seed %llu",
             iterations, parsed, compiled, ran, Date().timeIntervalSince(start), seed))
