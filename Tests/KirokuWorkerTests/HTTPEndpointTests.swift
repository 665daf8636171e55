import AsyncHTTPClient
import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("kiroku worker: /metrics, /healthz, /readyz", .subprocesses)
struct HTTPEndpointTests {
    static func get(_ url: String) async -> (status: Int, body: String)? {
        guard let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(5)),
              let body = try? await response.body.collect(upTo: 1 << 20) else { return nil }
        return (Int(response.status.code), String(buffer: body))
    }

    @Test("ready after warm-up; metrics count jobs by outcome, stage latencies, batch sizes and the model load; the endpoints stop with the worker")
    func endpoints() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        let port = try freePort()
        let base = "http://127.0.0.1:\(port)"
        var arguments = WorkerFixtures.workerArguments(lock: WorkerFixtures.lockFile())
        arguments[arguments.firstIndex(of: "--http-port")! + 1] = "\(port)"
        let worker = try ChildProcess(arguments + ["--http-host", "127.0.0.1"], databaseURL: url)
        defer { worker.signal(SIGKILL) }

        var ready: (status: Int, body: String)?
        for _ in 0..<1200 {
            ready = await Self.get(base + "/readyz")
            if ready?.status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(ready?.status == 200, "\(worker.stderr)")
        #expect(worker.stderr.contains("worker ready"), "/readyz said ready before the warm-up finished")
        #expect(await Self.get(base + "/healthz")?.status == 200)

        let queue = JobQueue(connection: connection)
        try WorkerFixtures.enqueuePhotos(6, into: queue)
        _ = try queue.enqueue(try WorkerFixtures.job(WorkerFixtures.brokenFiles()[3].path, inline: true))
        let done = try await WorkerFixtures.eventually(timeout: .seconds(60)) {
            let states = try WorkerFixtures.states(connection)
            return states["succeeded"] == 6 && states["failed"] == 1
        }
        #expect(done)
        // A running worker promotes jobs scheduled for later once they come due, and only then.
        let photo = try WorkerFixtures.photos()[0]
        var soon = try WorkerFixtures.job(photo, inline: false), later = soon
        soon.runAfter = Date().addingTimeInterval(2)
        later.runAfter = Date().addingTimeInterval(3600)
        let soonID = try queue.enqueue(soon), laterID = try queue.enqueue(later)
        let promoted = try await WorkerFixtures.eventually(timeout: .seconds(30)) { try WorkerFixtures.states(connection)["succeeded"] == 7 }
        #expect(promoted)
        let timing = try connection.query("""
            SELECT extract(epoch FROM started_at - run_after)::float8 AS late, (SELECT state FROM kiroku.jobs WHERE id = $2) AS other
            FROM kiroku.jobs WHERE id = $1
            """, [.int(soonID), .int(laterID)]).single("job")
        #expect(try timing.double("late") >= 0 && timing.double("late") < 5, "started after its run_after, within the promote interval")
        #expect(try timing.string("other") == "scheduled")

        let metrics = await Self.get(base + "/metrics")
        #expect(metrics?.status == 200)
        let text = metrics?.body ?? ""
        for expected in [#"kiroku_jobs_total{outcome="succeeded"} 7"#, #"kiroku_jobs_total{outcome="failed"} 1"#,
                         #"kiroku_job_stage_seconds_count{stage="inference"} 7"#, #"kiroku_job_stage_seconds_bucket{stage="decode""#,
                         "kiroku_batch_size_count", "kiroku_model_load_seconds ", "kiroku_worker_ready 1.0", "kiroku_model_integer_share 0.0", #"kiroku_queue_jobs{state="queued"}"#,
                         #"kiroku_queue_jobs{state="scheduled"}"#] {
            #expect(text.contains(expected), "missing \(expected) in:\n\(text)")
        }

        worker.signal(SIGTERM)
        let exit = await worker.wait(timeout: .seconds(60))
        #expect(exit.status == 0, "\(exit.stderr)")
        #expect(await Self.get(base + "/healthz") == nil, "the endpoints outlived the worker")
    }
}
