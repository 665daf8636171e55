import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

/// What the worker tests share: the default model, the photos and broken files `make test`
/// generates, and ways to enqueue them, run workers and watch the jobs table.
enum WorkerFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let model = root.appendingPathComponent("models/efficientnet-lite0.onnx")
    static let fixtures = root.appendingPathComponent(".kiroku/vision-fixtures")

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    /// The real photos, as paths.
    static func photos() throws -> [String] {
        let directory = fixtures.appendingPathComponent("photos")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
        guard !names.isEmpty, FileManager.default.fileExists(atPath: model.path) else {
            throw Missing(description: "photos or model missing under \(root.path): run `make test` (it runs make model and the fixture scripts)")
        }
        return names.map { directory.appendingPathComponent($0).path }
    }

    /// Broken files and the failure reason stored for each: a category, never the decoder's
    /// words about the content (those go to the worker's log).
    static func brokenFiles() -> [(path: String, reason: String)] {
        [("empty.jpg", "not an image"), ("huge_header.jpg", "image too large"), ("image.png", "unsupported image format"),
         ("random_bytes.jpg", "not an image"), ("truncated_10.jpg", "truncated image"), ("truncated_50.jpg", "truncated image"),
         ("truncated_90.jpg", "truncated image")]
            .map { (fixtures.appendingPathComponent("cases/\($0.0)").path, $0.1) }
    }

    /// A job for a file: its bytes inline, or its file:// URI.
    static func job(_ path: String, inline: Bool) throws -> NewJob {
        if inline {
            guard let data = FileManager.default.contents(atPath: path) else { throw Missing(description: "cannot read \(path)") }
            return NewJob(image: .inline(Array(data)))
        }
        return NewJob(image: .uri(URL(fileURLWithPath: path).absoluteString))
    }

    /// Enqueues `count` photo jobs (cycling through the photos, alternately inline and by URI);
    /// returns job id → photo path.
    @discardableResult
    static func enqueuePhotos(_ count: Int, into queue: JobQueue) throws -> [Int64: String] {
        let photos = try photos()
        let paths = (0..<count).map { photos[$0 % photos.count] }
        let ids = try queue.enqueue(batch: paths.enumerated().map { try job($1, inline: $0 % 2 == 0) }).map(\.id)
        return Dictionary(uniqueKeysWithValues: zip(ids, paths))
    }

    /// Records every transition into 'succeeded' in kiroku_test_successes, so a test can prove
    /// no job's result was written twice. SECURITY DEFINER: the trigger fires inside the queue's
    /// functions, as kiroku_owner, which may not write outside its schema.
    static func auditSuccesses(_ connection: PostgresConnection) throws {
        try connection.execute("""
            CREATE TABLE public.kiroku_test_successes (job_id bigint, worker_id text, attempt integer, at timestamptz DEFAULT clock_timestamp());
            CREATE FUNCTION public.kiroku_test_audit() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
            BEGIN
                INSERT INTO public.kiroku_test_successes (job_id, worker_id, attempt) VALUES (NEW.id, NEW.worker_id, NEW.attempt);
                RETURN NULL;
            END $$;
            CREATE TRIGGER kiroku_test_audit AFTER UPDATE OF state ON kiroku.jobs FOR EACH ROW
                WHEN (NEW.state = 'succeeded') EXECUTE FUNCTION public.kiroku_test_audit();
            """)
    }

    /// Job counts by state.
    static func states(_ connection: PostgresConnection) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try connection.query("SELECT state, count(*) AS n FROM kiroku.jobs GROUP BY state") {
            counts[try row.string("state")] = Int(try row.int("n"))
        }
        return counts
    }

    /// Polls until `condition` holds or `timeout` passes; returns whether it held.
    static func eventually(timeout: Duration = .seconds(180), _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try condition()
    }

    /// Arguments for a worker in a test: the default model, no HTTP unless asked, its own lock
    /// file (each test plays its own host), a short lease and quick rescues, file:// jobs under
    /// the fixtures only.
    static func workerArguments(lock: String, extra: [String] = []) -> [String] {
        ["worker", "--model", model.path, "--lock-file", lock, "--http-port", "0", "--lease", "3s",
         "--rescue-interval", "1s", "--poll-interval", "1s", "--threads", "1", "--file-root", fixtures.path] + extra
    }

    /// The engine run directly on `photos` (`kiroku classify` with the default model): each file's top-1 class.
    static func directTop1(_ photos: [String]) async throws -> [String: Int] {
        let direct = try await KirokuProcess.run(["classify", "--json", "--top", "1", "--model", model.path] + photos)
        #expect(direct.status == 0, "\(direct.stderr)")
        var top1: [String: Int] = [:]
        for line in direct.stdout.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            top1[object["file"] as? String ?? ""] = ((object["top"] as? [[String: Any]])?.first?["index"] as? Int)
        }
        return top1
    }

    /// A lock file path unique to one test.
    static func lockFile() -> String {
        TestScratch.path("worker", suffix: ".lock")
    }
}
