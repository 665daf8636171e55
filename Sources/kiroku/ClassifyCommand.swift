import ArgumentParser
import Foundation
import KirokuVision
import KirokuWorker

/// `kiroku classify`: local files through the model, no database: the worker's own `Classifier`
/// (one session, loaded once), without the queue.
struct Classify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Classify local image files with one reused model session (no database).",
        discussion: "A file that cannot be classified gets its own error line; the others are still classified, and the exit code is 1 at the end.")

    @Argument(help: "Image files.")
    var files: [String]

    @OptionGroup var engine: EngineOptions

    @Option(help: "JPEG decoding: reduced (the smallest DCT scale that suffices, default) or full (every pixel).")
    var decode: DecodeScale = .reduced

    @Option(help: "How many labels to print per image.")
    var top: Int = 5

    @Flag(help: "One JSON object per file per line: file, top [{index, label, score}], food, food_score, or error.")
    var json = false

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one FILE") }
        guard top >= 1 else { throw ValidationError("--top must be at least 1") }
    }

    struct Line: Encodable {
        var file: String
        var top: [ModelSidecar.Prediction]?
        var food: Bool?
        var foodScore: Float?
        var error: String?
    }

    func run() async throws {
        let classifier = try Classifier(model: try engine.modelURL(), threads: engine.threads, decodeLimits: .standard, decodeScale: decode,
                                        integerLayers: engine.integerLayers.choice)
        var failures = 0
        for file in files {
            do {
                let bytes: [UInt8]
                do {
                    bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
                } catch {
                    throw ImageError(.corrupt, "cannot read the file: \(error.localizedDescription)")
                }
                let result = await classifier.classify(try await classifier.prepare(bytes).input, top: top).classification
                if json {
                    print(try JSONOutput.encode(Line(file: file, top: result.top, food: result.food, foodScore: result.foodScore)))
                } else {
                    let labels = result.top.map { String(format: "%@ %.3f", $0.label, $0.score) }.joined(separator: ", ")
                    print(String(format: "%@: %@ (food %.2f): %@", file, result.food ? "food" : "not food", result.foodScore, labels))
                }
            } catch {
                failures += 1
                if json {
                    print(try JSONOutput.encode(Line(file: file, error: "\(error)")))
                } else {
                    printError("\(file): error: \(error)")
                }
            }
        }
        if failures > 0 { throw ReportedFailure() }
    }
}
