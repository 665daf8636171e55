import Foundation
import KirokuInference
import Testing

/// One fixture: a model built by scripts/make-inference-fixtures.py with ONNX Runtime's outputs.
struct ReferenceCase: CustomTestStringConvertible, Sendable {
    let name: String
    let directory: URL

    var testDescription: String { name }

    static let all: [ReferenceCase] = {
        guard let root = Bundle.module.url(forResource: "Fixtures", withExtension: nil),
              let names = try? FileManager.default.contentsOfDirectory(atPath: root.path) else { return [] }
        return names.sorted().map { ReferenceCase(name: $0, directory: root.appendingPathComponent($0)) }
    }()

    func tensor(_ file: String) throws -> Tensor {
        try NumpyFile.read(Array(try Data(contentsOf: directory.appendingPathComponent(file))))
    }

    /// input_0.npy, input_1.npy, ... in order.
    func inputs() throws -> [Tensor] {
        var tensors: [Tensor] = []
        while FileManager.default.fileExists(atPath: directory.appendingPathComponent("input_\(tensors.count).npy").path) {
            tensors.append(try tensor("input_\(tensors.count).npy"))
        }
        return tensors
    }
}

@Suite("Operators against ONNX Runtime")
struct ReferenceTests {
    @Test("the fixtures are present")
    func fixturesPresent() {
        #expect(ReferenceCase.all.count >= 50, "regenerate with scripts/make-inference-fixtures.py")
    }

    @Test("each model matches ONNX Runtime's outputs, with every kernel build this CPU runs", arguments: ReferenceCase.all)
    func matchesOnnxRuntime(_ reference: ReferenceCase) throws {
        let model = try Model(contentsOf: reference.directory.appendingPathComponent("model.onnx"))
        let inputs = try reference.inputs()
        let runs = [1, 2].flatMap { threads in KernelSet.supported().map { (threads, $0) } }
        for (threads, kernels) in runs {
            let session = try InferenceSession(model: model, threads: threads, kernels: kernels)
            let outputs = try session.run(inputs)
            let expected = try reference.tensor("expected_0.npy")
            #expect(outputs[0].shape == expected.shape, "\(reference.name): shape")
            guard outputs[0].shape == expected.shape else { return }
            let difference = zip(outputs[0].data, expected.data).map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
            #expect(difference < 1e-4, "\(reference.name), \(kernels) kernels, \(threads) threads: max relative difference \(difference)")
        }
    }
}
