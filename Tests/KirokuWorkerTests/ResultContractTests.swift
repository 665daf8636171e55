import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("The result contract", .subprocesses)
struct ResultContractTests {
    /// Validates JSON documents (one per line) against docs/result.schema.json with the Python
    /// jsonschema package (installed by `make setup`): a validator that is not ours.
    static func validate(_ documents: [String]) async throws -> [String] {
        let schema = WorkerFixtures.root.appendingPathComponent("docs/result.schema.json").path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            for line in sys.stdin:
                errors = sorted(e.message for e in validator.iter_errors(json.loads(line)))
                print("ok" if not errors else "; ".join(errors))
            """
        let run = try await ChildProcess(executable: URL(fileURLWithPath: "/usr/bin/env"), arguments: ["python3", "-c", script, schema],
                                   stdin: documents.joined(separator: "\n") + "\n").wait()
        guard run.status == 0 else {
            struct Failed: Error, CustomStringConvertible { let description: String }
            throw Failed(description: "the validator failed: \(run.stderr)")
        }
        return run.stdout.split(separator: "\n").map(String.init)
    }

    @Test("every result the worker stores validates against docs/result.schema.json; a document breaking it does not")
    func workerResults() async throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        _ = try WorkerFixtures.enqueuePhotos(4, into: queue)
        let worker = try await KirokuProcess.run(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--once"]), databaseURL: url)
        #expect(worker.status == 0, "\(worker.stderr)")
        let results = try queue.connection.query("SELECT result::text AS r FROM kiroku.jobs WHERE state = 'succeeded' ORDER BY id")
            .map { row throws(PostgresError) in try row.string("r") }
        #expect(results.count == 4)
        #expect(try await Self.validate(results) == Array(repeating: "ok", count: 4))
        // Each result says how it was made: the decode mode, and the precision the float default model ran at.
        #expect(results.allSatisfy { $0.contains(#""decode": "reduced""#) && $0.contains(#""precision": "float32""#) }, "\(results)")
        let registered = try queue.connection.query("SELECT model_precision FROM kiroku.workers").map { row throws(PostgresError) in
            try row.string("model_precision")
        }
        #expect(registered == ["float32"], "the worker registers the precision it runs at")

        // The validator is not a rubber stamp: a result without its labels, or with a key the
        // contract does not name, is refused.
        let verdicts = try await Self.validate([#"{"food": true, "food_score": 0.9, "model": {"name": "m", "sha256": "00"}}"#,
                                          results[0].replacingOccurrences(of: "\"food\":", with: "\"extra\": 1, \"food\":")])
        #expect(verdicts.count == 2 && verdicts.allSatisfy { $0 != "ok" }, "\(verdicts)")
        #expect(verdicts[0].contains("'top' is a required property"), "\(verdicts)")
    }
}
