import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Notifications")
struct NotificationTests {
    @Test("an idle worker wakes on enqueue, without waiting for its timeout")
    func wakeUp() throws {
        let url = try TestDatabase.create()
        let ready = DispatchSemaphore(value: 0)
        let waiter = try onThreads(2) { index -> Double in
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

    @Test("one notification per statement however many rows; results announce the job id")
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
}
