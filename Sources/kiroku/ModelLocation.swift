import ArgumentParser
import Foundation
import KirokuInference

/// Where the default model is: KIROKU_MODEL, else models/efficientnet-lite0.onnx under the
/// current directory (`make model` puts it there), else /usr/share/kiroku/models (containers).
enum ModelLocation {
    static let fileName = "efficientnet-lite0.onnx"

    /// The model to use: `explicit` when given, else the default model's location.
    static func resolve(_ explicit: String?) throws -> URL {
        if let explicit { return URL(fileURLWithPath: explicit) }
        if let path = ProcessInfo.processInfo.environment["KIROKU_MODEL"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let candidates = [FileManager.default.currentDirectoryPath + "/models/" + fileName, "/usr/share/kiroku/models/" + fileName]
        guard let found = candidates.first(where: FileManager.default.fileExists(atPath:)) else {
            throw UsageError(description: "no model given and the default model is not installed (looked in \(candidates.joined(separator: ", "))): run `make model`, or pass --model FILE.onnx")
        }
        return URL(fileURLWithPath: found)
    }
}

/// The options every command that runs the engine takes: which model, on how many threads.
struct EngineOptions: ParsableArguments {
    @Option(help: "The ONNX model (default: the installed default model, see docs/models.md).")
    var model: String?

    @Option(help: "Threads (default: the CPUs this process may use).")
    var threads: Int?

    @Option(help: "An int8 model's quantized layers: measured (each on integer or float kernels, whichever this CPU runs faster, timed at load), all (integer), none (float).")
    var integerLayers: IntegerLayersArgument = .measured

    /// The kinds of --integer-layers.
    enum IntegerLayersArgument: String, ExpressibleByArgument, CaseIterable {
        case measured, all, none

        /// The session's choice.
        var choice: IntegerLayerChoice {
            switch self {
            case .measured: .measured
            case .all: .all
            case .none: .none
            }
        }
    }

    func validate() throws {
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1") }
        if let problem = KernelSet.problem(requested: ProcessInfo.processInfo.environment["KIROKU_KERNELS"],
                                           supported: KernelSet.supported()) {
            throw ValidationError(problem)
        }
    }

    /// The model file to load.
    func modelURL() throws -> URL {
        try ModelLocation.resolve(model)
    }
}
