import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("CLI", .subprocesses)
struct CLITests {
    /// A directory of small JPEG-signed files plus one PNG and one text file.
    func photoDirectory() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("nested/deeper"), withIntermediateDirectories: true)
        try Data(fakeJPEG("one")).write(to: root.appendingPathComponent("one.jpg"))
        try Data(fakeJPEG("two")).write(to: root.appendingPathComponent("nested/two.jpeg"))
        try Data(fakeJPEG("three")).write(to: root.appendingPathComponent("nested/deeper/three.jpg"))
        try Data(fakeJPEG("one")).write(to: root.appendingPathComponent("nested/copy-of-one.jpg"))
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]).write(to: root.appendingPathComponent("logo.png"))
        try Data("not an image".utf8).write(to: root.appendingPathComponent("notes.txt"))
        return root
    }

    @Test("migrate, then enqueue a directory: JPEGs queued once per content, others reported and skipped")
    func enqueueDirectory() async throws {
        let url = try TestDatabase.create(migrated: false)
        let migrate = try await KirokuProcess.run(["migrate"], databaseURL: url)
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(migrate.stdout.contains("applied \(Migration.bundled.count) migrations"))
        #expect(try await KirokuProcess.run(["migrate"], databaseURL: url).stdout.contains("up to date"))

        let directory = try photoDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let enqueue = try await KirokuProcess.run(["enqueue", directory.path, "--priority", "3", "--model", "effnet"], databaseURL: url)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        #expect(enqueue.stdout.contains("enqueued 3 jobs"))
        #expect(enqueue.stdout.contains("1 already queued with the same content"), "copy-of-one.jpg")
        let again = try await KirokuProcess.run(["enqueue", directory.path, "--model", "effnet"], databaseURL: url)
        #expect(again.stdout.contains("enqueued 0 jobs; 4 already queued"), "\(again.stdout)")
        // The same files for another model are another request: new jobs, not a clash of keys.
        let otherModel = try await KirokuProcess.run(["enqueue", directory.path], databaseURL: url)
        #expect(otherModel.stdout.contains("enqueued 3 jobs"), "\(otherModel.stdout) \(otherModel.stderr)")
        #expect(enqueue.stderr.contains("logo.png: not a JPEG (it is a PNG image)"))
        #expect(enqueue.stderr.contains("notes.txt: not a JPEG"))

        let connection = try PostgresConnection(url)
        let jobs = try connection.query("SELECT count(*) AS n, min(priority) AS p, min(model) AS m FROM kiroku.jobs WHERE model = 'effnet'").single("jobs")
        #expect(try jobs.int("n") == 3 && jobs.int("p") == 3 && jobs.string("m") == "effnet")

        // Paths on stdin, as URIs, with --no-validate taking the PNG too.
        let list = directory.appendingPathComponent("logo.png").path + "\n" + directory.appendingPathComponent("one.jpg").path + "\n"
        let fromStdin = try await KirokuProcess.run(["enqueue", "-", "--uri", "--no-validate", "--no-idempotency-key", "--pool", "gpu"], databaseURL: url, stdin: list)
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        let uris = try connection.query("SELECT image_uri FROM kiroku.jobs WHERE pool = 'gpu' ORDER BY id")
        #expect(try uris.rows.map { try $0.string("image_uri") } == [
            URL(fileURLWithPath: directory.appendingPathComponent("logo.png").path).absoluteString,
            URL(fileURLWithPath: directory.appendingPathComponent("one.jpg").path).absoluteString,
        ])
    }

    @Test("status, jobs show, results, requeue and prune")
    func inspection() async throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        let ids = try queue.enqueue(batch: (0..<3).map { NewJob(image: .inline(fakeJPEG("s\($0)"))) }).map(\.id)
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: .seconds(60))
        #expect(try queue.complete(claimed[0].lease, resultJSON: #"{"top": "pizza, with \"cheese\""}"#))
        #expect(try queue.fail(claimed[1].lease, error: "corrupt JPEG, at byte 12", retryable: false) == .failed)
        try queue.registerWorker(id: "w", host: "host-a", pool: "cpu", model: "default", modelSHA256: String(repeating: "ab", count: 32), cores: 4, version: "test")

        let status = try await KirokuProcess.run(["status", "--json"], databaseURL: url)
        #expect(status.status == 0, "\(status.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let pool = (json?["pools"] as? [[String: Any]])?.first
        #expect(pool?["queued"] as? Int == 1 && pool?["succeeded"] as? Int == 1 && pool?["failed"] as? Int == 1)
        #expect((json?["workers"] as? [[String: Any]])?.first?["host"] as? String == "host-a")
        #expect(try await KirokuProcess.run(["status"], databaseURL: url).stdout.contains("1 live workers"))

        let show = try await KirokuProcess.run(["jobs", "show", String(claimed[1].id), "--json"], databaseURL: url)
        let shown = try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any]
        #expect(shown?["state"] as? String == "failed" && shown?["error_kind"] as? String == "permanent")
        let missing = try await KirokuProcess.run(["jobs", "show", "999999"], databaseURL: url)
        #expect(missing.status == 1 && missing.stderr.contains("job 999999 does not exist"))

        let results = try await KirokuProcess.run(["results", "--since", "1h"], databaseURL: url)
        let lines = results.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect((first?["result"] as? [String: Any])?["top"] as? String == #"pizza, with "cheese""#)
        let csv = try await KirokuProcess.run(["results", "--format", "csv"], databaseURL: url)
        #expect(csv.stdout.hasPrefix("id,state,pool,model,image_uri,attempt,enqueued_at,finished_at,error_kind,error,result\n"))
        #expect(csv.stdout.contains(#""corrupt JPEG, at byte 12""#))
        let table = try await KirokuProcess.run(["results", "--format", "table"], databaseURL: url).stdout.split(separator: "\n")
        #expect(table.count == 3 && table[0].hasPrefix("ID  IMAGE   STATE"))
        #expect(table.contains { $0.contains("inline") && $0.contains("failed") && $0.hasSuffix("corrupt JPEG, at byte 12") })

        #expect(try await KirokuProcess.run(["requeue", String(ids[2])], databaseURL: url).stderr.contains("it is queued"))
        let requeue = try await KirokuProcess.run(["requeue", "--failed"], databaseURL: url)
        #expect(requeue.status == 0 && requeue.stdout.contains("requeued 1 of 1 failed jobs"))

        try queue.connection.execute("UPDATE kiroku.jobs SET finished_at = now() - interval '8 days' WHERE state = 'succeeded'")
        let prune = try await KirokuProcess.run(["prune", "--older-than", "7d"], databaseURL: url)
        #expect(prune.status == 0 && prune.stdout.contains("pruned 1 finished jobs"))
    }

    @Test("exit codes: a database that is down is 1 and names the host; bad usage is 2")
    func exitCodes() async throws {
        let down = try await KirokuProcess.run(["status"], databaseURL: "postgresql://kiroku:hunter2@127.0.0.1:1/queue")
        #expect(down.status == 1)
        #expect(down.stderr.contains("127.0.0.1") && down.stderr.contains("port 1"))
        #expect(!down.stderr.contains("hunter2"))

        let badDuration = try await KirokuProcess.run(["prune", "--older-than", "7 parsecs"], databaseURL: "postgresql://127.0.0.1:1/x")
        #expect(badDuration.status == 2 && badDuration.stderr.contains("invalid duration"))
        let badScheme = try await KirokuProcess.run(["status"], databaseURL: "mysql://root:pw@db/x")
        #expect(badScheme.status == 2 && badScheme.stderr.contains("unsupported database URL scheme 'mysql'"))
        #expect(try await KirokuProcess.run(["enqueue"]).status == 2)
        #expect(try await KirokuProcess.run(["frobnicate"]).status == 2)
        let missingFile = try await KirokuProcess.run(["enqueue", "/nonexistent/photo.jpg"], databaseURL: "postgresql://127.0.0.1:1/x")
        #expect(missingFile.status == 2 && missingFile.stderr.contains("no such file or directory: /nonexistent/photo.jpg"))
        #expect(try await KirokuProcess.run(["--help"]).status == 0)
    }
}
