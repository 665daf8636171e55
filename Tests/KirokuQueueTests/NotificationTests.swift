import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Notifications", .subprocesses)
struct NotificationTests {
    @Test("an idle worker wakes on enqueue, without waiting for its timeout")
    func wakeUp() async throws {
        let url = try TestDatabase.create()
        let ready = DispatchSemaphore(value: 0)
        let waiter = try await onThreads(2) { index -> Double in
            if index == 0 {
                let queue = JobQueue(connection: try PostgresConnection(url))
                _ = try queue.waitForJobs(pool: "cpu", timeout: .zero)  // LISTEN now
                ready.signal()
                let start = ContinuousClock.now
                let woken = try queue.waitForJobs(pool: "cpu", timeout: .seconds(30))
                #expect(woken)
                #expect(try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(10)).count == 1)
                return start.duration(to: .now).milliseconds
            }
            ready.wait()
            Thread.sleep(forTimeInterval: 0.2)
            _ = try JobQueue(connection: try PostgresConnection(url)).enqueue(NewJob(image: .inline(fakeJPEG("wake"))))
            return 0
        }
        // Woken by the notification (~200 ms), far before the 30 s timeout.
        #expect(waiter[0] > 150 && waiter[0] < 10_000, "woke after \(waiter[0]) ms")
    }

    @Test("waiting times out when nothing arrives, and ignores other pools")
    func timeout() throws {
        let url = try TestDatabase.create()
        let queue = JobQueue(connection: try PostgresConnection(url))
        _ = try queue.waitForJobs(pool: "cpu", timeout: .zero)
        _ = try JobQueue(connection: try PostgresConnection(url)).enqueue(NewJob(image: .inline(fakeJPEG("g")), pool: "gpu"))
        let start = ContinuousClock.now
        #expect(try queue.waitForJobs(pool: "cpu", timeout: .milliseconds(300)) == false)
        #expect(start.duration(to: .now) >= .milliseconds(290))
    }

    @Test("one notification per statement however many rows; one finished job announces its id")
    func perStatement() throws {
        let url = try TestDatabase.create()
        let listener = try PostgresConnection(url)
        try listener.listen(JobQueue.jobsChannel)
        try listener.listen(JobQueue.resultsChannel)
        let queue = JobQueue(connection: try PostgresConnection(url))
        let ids = try queue.enqueue(batch: (0..<500).map { NewJob(image: .inline(fakeJPEG("n\($0)"))) }).map(\.id)
        try queue.connection.execute("INSERT INTO kiroku.jobs (image_uri) SELECT 'file:///x/' || g || '.jpg' FROM generate_series(1, 1000) g")
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 1, lease: .seconds(10))
        _ = try queue.complete(claimed[0].lease, resultJSON: "{}")

        var received: [PostgresNotification] = []
        while let notification = try listener.waitForNotification(timeout: .milliseconds(300)) {
            received.append(notification)
        }
        let jobs = received.filter { $0.channel == JobQueue.jobsChannel }
        #expect(jobs.count == 2, "one per statement: got \(jobs.count)")
        #expect(jobs.allSatisfy { $0.payload == "cpu" })
        let results = received.filter { $0.channel == JobQueue.resultsChannel }
        #expect(results.map(\.payload) == [String(ids[0])])
    }

    @Test("finished jobs are announced once per statement, their ids comma-separated, at most 400 per notification; fenced ones not at all")
    func resultsPerStatement() throws {
        let url = try TestDatabase.create()
        let listener = try PostgresConnection(url)
        try listener.listen(JobQueue.resultsChannel)
        let queue = JobQueue(connection: try PostgresConnection(url))
        _ = try queue.enqueue(batch: (0..<460).map { NewJob(image: .uri("https://x/\($0).jpg")) })
        func announced() throws -> [[Int64]] {
            var payloads: [[Int64]] = []
            while let notification = try listener.waitForNotification(timeout: .milliseconds(300)) {
                payloads.append(notification.payload.split(separator: ",").compactMap { Int64($0) })
            }
            return payloads
        }
        let claimed = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 450, lease: .seconds(60))
        #expect(claimed.count == 450)
        // One forged token among them: that job is fenced and not announced.
        var completions = claimed.map { JobCompletion(lease: $0.lease, resultJSON: "{}") }
        completions[7] = JobCompletion(lease: JobLease(id: claimed[7].id, token: "forged"), resultJSON: "{}")
        #expect(try queue.complete(completions).filter { $0 }.count == 449)
        let stored = claimed.map(\.id).enumerated().filter { $0.offset != 7 }.map(\.element)
        #expect(try announced() == [Array(stored.prefix(400)), Array(stored.dropFirst(400))])
        // A final failure, a cancel and a rescue out of attempts announce theirs; a retry does not.
        let more = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 3, lease: .seconds(60))
        #expect(try queue.fail(more[0].lease, error: "corrupt", retryable: false) == .failed)
        #expect(try queue.fail(more[1].lease, error: "timeout", retryable: true) == .scheduled)
        #expect(try queue.cancel(jobID: claimed[7].id))
        try queue.connection.execute("UPDATE kiroku.jobs SET max_attempts = 1, lease_expires_at = now() - interval '1 s' WHERE id = \(more[2].id)")
        #expect(try queue.rescueExpired() == 1)
        #expect(try announced() == [[more[0].id], [claimed[7].id], [more[2].id]])
    }
}
