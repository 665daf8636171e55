// A seeded mutation fuzzer for the model loader, compiler and kernels.
//
//   kiroku-fuzz-model ITERATIONS SEED_DIR... [--seed N] [--current FILE]
//
// Each iteration takes a seed model (any .onnx under the SEED_DIRs), applies one to four random
// mutations, and feeds it to Model(serialized:), then InferenceSession, then one run on zeros.
// Every error must be a thrown InferenceError; a crash ends the process, and FILE (written before
// each attempt, default .build/fuzz-current.bin) holds the input that caused it. Deterministic
// for a given --seed.
import Foundation
import KirokuFuzzing
import KirokuInference

let (iterations, directories, seed, currentPath) = Mutator.arguments(usage: "kiroku-fuzz-model ITERATIONS SEED_DIR... [--seed N] [--current FILE]")
let seeds = Mutator.seeds(under: directories, extensions: [".onnx"])
guard !seeds.isEmpty else {
    FileHandle.standardError.write(Data("kiroku-fuzz-model: no .onnx seeds under \(directories.joined(separator: ", "))\n".utf8))
    exit(2)
}
var mutator = Mutator(seeds: seeds, seed: seed)
var parsed = 0, compiled = 0, ran = 0
let start = Date()
for iteration in 0..<iterations {
    let bytes = mutator.input(iteration)
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
try? FileManager.default.removeItem(atPath: currentPath)
print(String(format: "kiroku-fuzz-model: %d executions, 0 crashes (%d parsed, %d compiled, %d ran) in %.1f s, seed %llu",
             iterations, parsed, compiled, ran, Date().timeIntervalSince(start), seed))
