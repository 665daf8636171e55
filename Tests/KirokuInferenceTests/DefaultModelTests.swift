import Foundation
import KirokuInference
import Testing

/// The default model (EfficientNet-Lite0 with its ImageNet weights, put in models/ by
/// `make model`) against ONNX Runtime's logits for the same seeded batch.
@Suite("EfficientNet-Lite0 against ONNX Runtime")
struct DefaultModelTests {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("models")

    func load(_ name: String) throws -> Tensor {
        let url = Self.models.appendingPathComponent(name)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            struct Missing: Error, CustomStringConvertible { let description: String }
            throw Missing(description: "\(url.path) is missing: run `make model` (make test does)")
        }
        return try NumpyFile.read(Array(data))
    }

    @Test("logits match ONNX Runtime within 1e-3, batch 2, on 1 and 2 threads, with every kernel build this CPU runs")
    func matchesOnnxRuntime() throws {
        let model = try Model(contentsOf: Self.models.appendingPathComponent("efficientnet-lite0.onnx"))
        let input = try load("efficientnet-lite0.reference-input.npy"), expected = try load("efficientnet-lite0.reference-expected.npy")
        for (threads, kernels) in [1, 2].flatMap({ threads in KernelSet.supported().map { (threads, $0) } }) {
            let session = try InferenceSession(model: model, batchSize: 2, threads: threads, kernels: kernels)
            let logits = try session.run(input)[0]
            #expect(logits.shape == [2, 1000])
            let difference = zip(logits.data, expected.data).map { abs($0 - $1) }.max() ?? .infinity
            #expect(difference < 1e-3, "max absolute logit difference \(difference) on \(threads) threads, \(kernels) kernels")
            for row in 0..<2 {
                let ours = logits.data[(row * 1000)..<((row + 1) * 1000)], theirs = expected.data[(row * 1000)..<((row + 1) * 1000)]
                #expect(ours.firstIndex(of: ours.max()!) == theirs.firstIndex(of: theirs.max()!), "top-1 of row \(row)")
            }
        }
    }

    @Test("the optimizer folds every BatchNormalization and ReLU6 into the convolutions")
    func optimized() throws {
        let session = try InferenceSession(model: try Model(contentsOf: Self.models.appendingPathComponent("efficientnet-lite0.onnx")))
        #expect(!session.steps.contains { ["BatchNormalization", "Clip"].contains($0.op) }, "\(session.steps)")
        // The largest live set is the 96x112x112 expansion beside the 96x56x56 depthwise output,
        // plus the 3x224x224 input that lives throughout: about 1.65 M floats, of 7.1 M without reuse.
        #expect(session.arenaFloats < 2_000_000, "buffers reused: \(session.arenaFloats) of \(session.unplannedFloats)")
    }
}
