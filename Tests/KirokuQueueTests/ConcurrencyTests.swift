import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Concurrent claims", .subprocesses)
struct ConcurrencyTests {
    @Test("8 connections claim 10,000 jobs: each claimed exactly once, all completed")
    func exactlyOnce() async throws {
        let url = try TestDatabase.create()
        let total = 10_000
        let producer = JobQueue(connection: try PostgresConnection(url))
        for start in stride(from: 0, to: total, by: 1000) {
            _ = try producer.enqueue(batch: (start..<start + 1000).map { NewJob(image: .uri("file:///photos/\($0).jpg")) })
        }

        let claimedPerWorker = try await onThreads(8) { worker -> [Int64] in
            let queue = JobQueue(connection: try PostgresConnection(url))
            var mine: [Int64] = []
            while true {
                let batch = try queue.claim(workerID: "w\(worker)", pool: "cpu", maxJobs: 1 + worker * 4, lease: .seconds(60))
                if batch.isEmpty { return mine }
                let stored = try queue.complete(batch.map { JobCompletion(lease: $0.lease, resultJSON: #"{"w": \#(worker)}"#) })
                #expect(stored.allSatisfy { $0 })
                mine += batch.map(\.id)
            }
        }
        let all = claimedPerWorker.flatMap { $0 }
        #expect(all.count == total)
        #expect(Set(all).count == total)
        #expect(claimedPerWorker.filter { !$0.isEmpty }.count >= 2, "work was shared")
        let states = try producer.connection.query("SELECT state, count(*) AS n, max(attempt) AS a FROM kiroku.jobs GROUP BY state")
        #expect(states.rows.count == 1)
        #expect(try states.single("states").string("state") == "succeeded")
        #expect(try states.single("states").int("n") == Int64(total))
        #expect(try states.single("states").int("a") == 1)
    }

    @Test("many concurrent rescuers do not block each other or double-rescue")
    func concurrentRescue() async throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        _ = try queue.enqueue(batch: (0..<200).map { NewJob(image: .uri("file:///r/\($0).jpg")) })
        _ = try queue.claim(workerID: "dead", pool: "cpu", maxJobs: 200, lease: .seconds(1))
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_expires_at = now() - interval '1 second'")
        let rescued = try await onThreads(4) { _ in try JobQueue(connection: try PostgresConnection(url)).rescueExpired() }
        #expect(rescued.reduce(0, +) == 200)
        let attempts = try queue.connection.query("SELECT count(*) AS n FROM kiroku.jobs WHERE state = 'queued' AND attempt = 1")
        #expect(try attempts.single("count").int("n") == 200)
    }
}
