import ArgumentParser
import Foundation
import KirokuInference
import KirokuQueue

/// `kiroku infer`: one tensor through a model, .npy in and out.
struct Infer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one float32 tensor (.npy, batch first) through an ONNX model and write the outputs as .npy.",
        discussion: "The plain tool for checking the engine against any other runtime. With several outputs, output i > 0 goes to OUTPUT with _i before the extension.")

    @OptionGroup var engine: EngineOptions

    @Option(help: "Input tensor, a float32 .npy file; its first axis is the batch.")
    var input: String

    @Option(help: "Where to write the first output (.npy).")
    var output: String

    func run() throws {
        let loaded = try Model(contentsOf: try engine.modelURL())
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: input))
        } catch {
            throw UsageError(description: "cannot read --input \(input): \(error.localizedDescription)")
        }
        let tensor = try NumpyFile.read(Array(bytes))
        let session = try InferenceSession(model: loaded, batchSize: tensor.shape.first, threads: engine.threads,
                                           integerLayers: engine.integerLayers.choice)
        let start = ContinuousClock.now
        let outputs = try session.run(tensor)
        let elapsed = start.duration(to: .now)
        let target = URL(fileURLWithPath: output)
        for (index, result) in outputs.enumerated() {
            let url = index == 0 ? target : target.deletingLastPathComponent()
                .appendingPathComponent("\(target.deletingPathExtension().lastPathComponent)_\(index).\(target.pathExtension)")
            try Data(NumpyFile.write(result)).write(to: url)
            print("\(url.path): \(result.shape)")
        }
        printError(String(format: "%@: %d steps, %d threads, %.2f ms", loaded.name, session.steps.count, session.threads,
                          elapsed.milliseconds))
    }
}
