import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku enqueue --wait", .subprocesses)
struct EnqueueWaitTests {
    @Test("with a worker running: each result printed as it finishes, exit 1 when one failed, 0 when all succeeded; without one: exit 3 naming what is pending")
    func waits() async throws {
        let url = try TestDatabase.create()
        let photos = Array(try WorkerFixtures.photos().prefix(4))
        let truncated = WorkerFixtures.brokenFiles().first { $0.path.hasSuffix("truncated_50.jpg") }!.path

        // No worker yet: the wait times out, exit 3, every job named as pending.
        let lonely = try await KirokuProcess.run(["enqueue", "--wait", "--timeout", "1s", "--no-idempotency-key"] + photos.prefix(2), databaseURL: url)
        #expect(lonely.status == 3, "\(lonely.stderr)")
        #expect(lonely.stderr.contains("timed out with 2 of 2 jobs still pending: 1, 2"), "\(lonely.stderr)")

        let worker = try ChildProcess(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile()), databaseURL: url)
        defer { worker.signal(SIGTERM) }
        // A truncated JPEG among photos: every result as one JSON line, the failure too, exit 1.
        let mixed = try await KirokuProcess.run(["enqueue", "--wait", "--timeout", "120s", "--format", "json", "--no-idempotency-key",
                                           truncated] + photos, databaseURL: url)
        #expect(mixed.status == 1, "\(mixed.stderr)")
        let lines = mixed.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.count == 5, "\(mixed.stdout)")
        #expect(Set(lines.compactMap { $0["id"] as? Int }) == Set(3...7), "only the jobs this command enqueued")
        #expect(lines.filter { $0["state"] as? String == "succeeded" }.count == 4)
        #expect(lines.contains { $0["state"] as? String == "failed" && $0["error"] as? String == "truncated image" })
        #expect(mixed.stderr.contains("1 of 5 jobs did not succeed"), "\(mixed.stderr)")

        // The two jobs that timed out above finish too; a new wait for photos alone succeeds, as a table.
        let good = try await KirokuProcess.run(["enqueue", "--wait", "--timeout", "120s", "--no-idempotency-key"] + photos.prefix(2), databaseURL: url)
        #expect(good.status == 0, "\(good.stderr)")
        let rows = good.stdout.split(separator: "\n")
        #expect(rows.first?.hasPrefix("ID") == true && rows.count == 3, "\(good.stdout)")
        #expect(rows.dropFirst().allSatisfy { $0.contains("succeeded") }, "\(good.stdout)")

        let bad = try await KirokuProcess.run(["enqueue", "--format", "csv"] + photos.prefix(1), databaseURL: url)
        #expect(bad.status != 0 && bad.stderr.contains("--timeout and --format go with --wait"), "\(bad.stderr)")
        worker.signal(SIGTERM)
        _ = await worker.wait(timeout: .seconds(60))
    }
}
