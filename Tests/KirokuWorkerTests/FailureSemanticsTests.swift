import Foundation
import KirokuQueue
import KirokuTestSupport
import KirokuWorker
import Testing

@Suite("kiroku worker: failure semantics and start-up checks", .subprocesses)
struct FailureSemanticsTests {
    @Test("an unreachable image URL is a transient failure: queued again with a backoff, the error kept; a job for another model fails for good")
    func transientAndWrongModel() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let queue = JobQueue(connection: connection)
        let unreachable = try queue.enqueue(NewJob(image: .uri("http://127.0.0.1:\(try freePort())/photo.jpg")))
        let otherModel = try queue.enqueue(NewJob(image: .inline(fakeJPEG("m")), model: "resnet50"))
        let run = try await KirokuProcess.run(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: [
            "--once", "--fetch-timeout", "2s", "--allow-network", "127.0.0.1/32"]), databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("succeeded=0 failed=1 retried=1"), "\(run.stdout)")
        let retried = try connection.query(
            "SELECT state, attempt, error, run_after > now() AS later FROM kiroku.jobs WHERE id = $1", [.int(unreachable)]).single("job")
        #expect(try retried.string("state") == "scheduled" && retried.int("attempt") == 1 && retried.bool("later"))
        #expect(try retried.string("error") == "image unreachable", "a category: no address, port or status")
        let wrong = try connection.query("SELECT state, error_kind, error FROM kiroku.jobs WHERE id = $1", [.int(otherModel)]).single("job")
        #expect(try wrong.string("state") == "failed" && wrong.string("error_kind") == "permanent")
        // A category that does not carry the producer's text (the model name could be anything).
        #expect(try wrong.string("error") == "model: the job asks for a model this pool's workers do not run")
        #expect(run.stderr.contains("job asks for model 'resnet50'"), "the detail is in the log")
    }

    @Test("jobs the fetch policy refuses fail for good as 'refused', naming the rule; no stored error carries a byte of content")
    func refusedAndLeakFree() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let queue = JobQueue(connection: connection)
        let secret = Array("root:x:0:0:root:/root:/bin/bash\n".utf8)
        let cases: [(NewJob, kind: String, error: String)] = [
            (NewJob(image: .uri("file:///etc/passwd")), "refused", "refused by policy: file outside the allowed roots"),
            (NewJob(image: .uri("file://" + WorkerFixtures.fixtures.path + "/../../../../etc/passwd")), "refused",
             "refused by policy: file outside the allowed roots"),
            (NewJob(image: .uri("http://169.254.169.254/latest/meta-data/iam/security-credentials/")), "refused",
             "refused by policy: link-local address (cloud metadata)"),
            (NewJob(image: .uri("http://0x7f000001:5432/")), "refused", "refused by policy: loopback address"),
            (NewJob(image: .inline(secret)), "permanent", "not an image"),
        ]
        let ids = try queue.enqueue(batch: cases.map(\.0)).map(\.id)
        let run = try await KirokuProcess.run(WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile(), extra: ["--once"]), databaseURL: url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("succeeded=0 failed=5 retried=0"), "\(run.stdout)")
        for (id, expected) in zip(ids, cases) {
            let row = try connection.query("SELECT state, error_kind, error FROM kiroku.jobs WHERE id = $1", [.int(id)]).single("job")
            #expect(try row.string("state") == "failed" && row.string("error_kind") == expected.kind, "job \(id)")
            #expect(try row.string("error") == expected.error, "job \(id)")
        }
        // The detail stays in the worker's log, for the operator.
        #expect(run.stderr.contains("72 6F 6F 74") || run.stderr.contains("the data is"), "\(run.stderr.suffix(2000))")
    }

    @Test("the host lock: a second holder is refused naming the first; released when the holder goes")
    func hostLock() throws {
        let path = WorkerFixtures.lockFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var first: HostLock? = try HostLock(path: path)
        let refused = #expect(throws: HostLockError.self) { try HostLock(path: path) }
        #expect(refused?.message.contains("(pid \(getpid()))") == true)
        #expect(first?.path == path)
        first = nil
        #expect(throws: Never.self) { _ = try HostLock(path: path) }
    }

    @Test("bad flags and URLs say what to fix, exit 2")
    func usage() async throws {
        let badURL = try await KirokuProcess.run(["worker", "--database-url", "mysql://x@y/z", "--model", WorkerFixtures.model.path])
        #expect(badURL.status == 2 && badURL.stderr.contains("unsupported database URL scheme 'mysql'"), "\(badURL.stderr)")
        let badLease = try await KirokuProcess.run(["worker", "--lease", "1s"])
        #expect(badLease.status == 2 && badLease.stderr.contains("--lease must be at least 3s"), "\(badLease.stderr)")
        let badPort = try await KirokuProcess.run(["worker", "--http-port", "70000"])
        #expect(badPort.status == 2 && badPort.stderr.contains("--http-port"), "\(badPort.stderr)")
    }

    @Test("a database that is down at start: exit 1 naming host and port, the password masked")
    func databaseDown() async throws {
        let port = try freePort()
        let run = try await KirokuProcess.run(["worker", "--once", "--http-port", "0", "--lock-file", WorkerFixtures.lockFile(),
                                         "--model", WorkerFixtures.model.path,
                                         "--database-url", "postgresql://kiroku:s3cret@127.0.0.1:\(port)/kiroku"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("127.0.0.1") && run.stderr.contains("\(port)"), "\(run.stderr)")
        #expect(!run.stderr.contains("s3cret"))
    }
}
