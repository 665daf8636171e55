import Foundation
@testable import KirokuInference
import KirokuQueue
import KirokuTestSupport
import SwiftProtobuf
import Testing

@Suite("A model exported with a fixed batch of 1", .subprocesses)
struct FixedBatchModelTests {
    /// The default model with its input's batch axis fixed at 1, as torch.onnx.export writes a
    /// model by default, beside a copy of its sidecar; returns the model's path.
    static func fixedBatchModel() throws -> URL {
        var proto = try Onnx_ModelProto(serializedBytes: try Data(contentsOf: WorkerFixtures.model))
        proto.graph.input[0].type.tensorType.shape.dim[0].value = .dimValue(1)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-fixed-batch-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let model = directory.appendingPathComponent("efficientnet-lite0.onnx")
        try proto.serializedData().write(to: model)
        try FileManager.default.copyItem(at: WorkerFixtures.model.deletingPathExtension().appendingPathExtension("json"),
                                        to: model.deletingPathExtension().appendingPathExtension("json"))
        return model
    }

    @Test("the worker claims batches and classifies them image by image: every job succeeds with the default model's top-1")
    func servesClaimedBatches() async throws {
        let model = try Self.fixedBatchModel()
        defer { try? FileManager.default.removeItem(at: model.deletingLastPathComponent()) }
        // The engine itself refuses a batch of 3 for this model, as ONNX Runtime does.
        #expect(throws: InferenceError.self) { try InferenceSession(model: try Model(contentsOf: model), batchSize: 3).run([Tensor(zeros: [3, 3, 224, 224])]) }

        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let photoJobs = try WorkerFixtures.enqueuePhotos(16, into: JobQueue(connection: connection))
        let photos = Array(Set(photoJobs.values)).sorted()
        let directTop1 = try await WorkerFixtures.directTop1(photos)

        var arguments = WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--once", "--max-batch", "8"])
        arguments[arguments.firstIndex(of: WorkerFixtures.model.path)!] = model.path
        let run = try await KirokuProcess.run(arguments, databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("succeeded=16 failed=0"), "\(run.stdout)")
        for row in try connection.query("SELECT id, result->'top'->0->>'index' AS top1 FROM kiroku.jobs") {
            let path = try #require(photoJobs[try row.int("id")])
            #expect(Int(try row.string("top1")) == directTop1[path], "\(path)")
        }
        // Jobs claimed together share the claim's start time: batches of more than one were claimed.
        let largest = try connection.query("SELECT max(n)::bigint AS n FROM (SELECT count(*) AS n FROM kiroku.jobs GROUP BY started_at) claims")
        #expect(try largest.single("claims").int("n") > 1)
    }
}
