import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku worker end to end", .subprocesses)
struct EndToEndTests {
    @Test("200 jobs of photos and broken files: every photo gets the engine's own top-1, every broken file fails permanently with its reason, nothing is left")
    func mixedQueue() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let queue = JobQueue(connection: connection)
        let broken = WorkerFixtures.brokenFiles()
        let missing = WorkerFixtures.fixtures.appendingPathComponent("cases/no-such-photo.jpg").path
        // 13 broken jobs (each file inline and by URI; an empty inline image is refused at
        // enqueue), 2 for a missing file, 185 photos.
        var expectedReason: [Int64: String] = [:]
        for (path, reason) in broken {
            for inline in [true, false] where !(inline && path.hasSuffix("/empty.jpg")) {
                expectedReason[try queue.enqueue(try WorkerFixtures.job(path, inline: inline))] = reason
            }
        }
        for _ in 0..<2 {
            expectedReason[try queue.enqueue(NewJob(image: .uri("file://" + missing)))] = "image unreachable"
        }
        let photoJobs = try WorkerFixtures.enqueuePhotos(200 - expectedReason.count, into: queue)

        // The engine run directly on the same files: the reference top-1 per photo.
        let photos = try WorkerFixtures.photos()
        let directTop1 = try await WorkerFixtures.directTop1(photos)
        #expect(directTop1.count == photos.count)

        let run = try await KirokuProcess.run(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--once", "--threads", "2"]),
                                        databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("succeeded=\(photoJobs.count) failed=\(expectedReason.count) retried=0"), "\(run.stdout)")

        #expect(try WorkerFixtures.states(connection) == ["succeeded": photoJobs.count, "failed": expectedReason.count])
        // The model file's SHA-256 as coreutils computes it (a double hash once passed here, checked against itself).
        let sum = try await ChildProcess(executable: URL(fileURLWithPath: "/usr/bin/sha256sum"), arguments: [WorkerFixtures.model.path]).wait()
        let modelHash = String(sum.stdout.prefix(64))
        let worker = try connection.query("SELECT id, stopped_at IS NOT NULL AS stopped FROM kiroku.workers").single("worker")
        #expect(try worker.bool("stopped"))
        for row in try connection.query("SELECT id, state, error, error_kind, result::text AS result, timings::text AS timings FROM kiroku.jobs") {
            let id = try row.int("id")
            if let path = photoJobs[id] {
                let result = try JSONSerialization.jsonObject(with: Data(try row.string("result").utf8)) as? [String: Any] ?? [:]
                let top = result["top"] as? [[String: Any]] ?? []
                #expect(top.count == 5)
                #expect(top.first?["index"] as? Int == directTop1[path], "job \(id) (\(path))")
                #expect(result["food"] is Bool && result["food_score"] is Double)
                #expect((result["model"] as? [String: Any])?["sha256"] as? String == modelHash)
                #expect((result["model"] as? [String: Any])?["name"] as? String == "efficientnet-lite0")
                let workerID = try worker.string("id")
                #expect(result["pool"] as? String == "cpu" && result["worker_id"] as? String == workerID)
                let timings = try JSONSerialization.jsonObject(with: Data(try row.string("timings").utf8)) as? [String: Double] ?? [:]
                #expect(Set(timings.keys) == ["queue_wait_ms", "fetch_ms", "decode_ms", "inference_ms", "total_ms"])
                #expect(timings["inference_ms"]! > 0 && timings["total_ms"]! >= timings["inference_ms"]!)
            } else {
                #expect(try row.string("state") == "failed")
                #expect(try row.optionalString("error_kind") == "permanent")
                #expect(try row.optionalString("error") == expectedReason[id]!, "job \(id)")
            }
        }
    }
}
