import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

/// A claim starts after the session's last full batch (migration 0013) and still takes every job
/// that becomes runnable ahead of that point, in priority order.
@Suite("Claim cursor")
struct ClaimCursorTests {
    let lease = Duration.seconds(30)

    func cursor(_ queue: JobQueue) throws -> String {
        try queue.connection.query("SELECT current_setting('kiroku.claim_cursor', true) AS c").single("cursor").string("c")
    }

    func claimIDs(_ queue: JobQueue, _ n: Int) throws -> [Int64] {
        try queue.claim(workerID: "w", pool: "cpu", maxJobs: n, lease: lease).map(\.id)
    }

    @Test("a full batch leaves a cursor; the next claim starts after it, and a short batch starts over")
    func cursorKeptAndDropped() throws {
        let queue = try TestDatabase.queue()
        let ids = try queue.enqueue(batch: (0..<5).map { NewJob(image: .uri("https://x/\($0).jpg")) }).map(\.id)
        #expect(try claimIDs(queue, 2) == Array(ids[0..<2]))
        #expect(try cursor(queue).hasPrefix("cpu "), "a full batch keeps a cursor")
        // The claim's index scan starts at the cursor: the claimed jobs' entries are not read again.
        #expect(try claimIDs(queue, 2) == Array(ids[2..<4]))
        #expect(try claimIDs(queue, 2) == [ids[4]])
        #expect(try cursor(queue) == "", "a short batch drops the cursor")
    }

    @Test("jobs that become runnable ahead of the cursor are claimed first: higher priority, promoted, rescued, released, requeued, edited")
    func runnableAheadOfCursor() throws {
        let queue = try TestDatabase.queue()
        let ids = try queue.enqueue(batch: (0..<40).map { NewJob(image: .uri("https://x/\($0).jpg")) }).map(\.id)
        #expect(try claimIDs(queue, 2) == Array(ids[0..<2]))

        // A job inserted above the default priority.
        let urgent = try queue.enqueue(NewJob(image: .uri("https://x/urgent.jpg"), priority: 5))
        #expect(try claimIDs(queue, 2) == [urgent, ids[2]])

        // A scheduled job above the default priority, promoted when due.
        let nightly = try queue.enqueue(NewJob(image: .uri("https://x/nightly.jpg"), priority: 5, runAfter: Date().addingTimeInterval(3600)))
        #expect(try claimIDs(queue, 2) == Array(ids[3..<5]))
        try queue.connection.execute("UPDATE kiroku.jobs SET run_after = now() - interval '1 s' WHERE id = \(nightly)")
        #expect(try queue.promoteDue() == 1)
        #expect(try claimIDs(queue, 2) == [nightly, ids[5]])

        // A released job goes back ahead of the cursor and is claimed next.
        let held = try queue.claim(workerID: "w", pool: "cpu", maxJobs: 2, lease: lease)
        #expect(held.map(\.id) == Array(ids[6..<8]))
        #expect(try queue.release([held[0].lease]) == 1)
        #expect(try claimIDs(queue, 2) == [ids[6], ids[8]])

        // A job whose lease expired is rescued ahead of the cursor.
        try queue.connection.execute("UPDATE kiroku.jobs SET lease_expires_at = now() - interval '1 s' WHERE id = \(ids[0])")
        #expect(try queue.rescueExpired() == 1)
        #expect(try claimIDs(queue, 2) == [ids[0], ids[9]])

        // An admin's edit: a queued job raised to a higher priority.
        try queue.connection.execute("UPDATE kiroku.jobs SET priority = 3 WHERE id = \(ids[30])")
        #expect(try claimIDs(queue, 2) == [ids[30], ids[10]])
    }

    @Test("a job committed behind the cursor with nothing to tell the claim is taken once the cursor is 100 ms old")
    func cursorExpires() throws {
        let queue = try TestDatabase.queue()
        let ids = try queue.enqueue(batch: (0..<10).map { NewJob(image: .uri("https://x/\($0).jpg")) }).map(\.id)
        let started = ContinuousClock.now
        #expect(try claimIDs(queue, 2) == Array(ids[0..<2]))
        // As if a producer's transaction holding a lower id committed late: an edit the epoch does not see.
        try queue.connection.execute("SET session_replication_role = replica")
        try queue.connection.execute("UPDATE kiroku.jobs SET state = 'queued', worker_id = NULL, lease_expires_at = NULL, lease_token_hash = NULL WHERE id = \(ids[0])")
        try queue.connection.execute("SET session_replication_role = DEFAULT")
        let sinceHead = ContinuousClock.now - started
        let next = try claimIDs(queue, 2)
        if sinceHead < .milliseconds(80) {
            #expect(next == Array(ids[2..<4]), "within 100 ms the cursor holds")
        } else {
            #expect(next == [ids[0], ids[2]], "the cursor is already older than 100 ms: the claim starts at the head")
        }
        Thread.sleep(forTimeInterval: 0.15)
        #expect(try claimIDs(queue, 2).first == ids[0] || next.first == ids[0], "the job behind the cursor is claimed once the cursor is 100 ms old")
    }

    @Test("a cursor the session sets by hand is parsed strictly and cannot make a claim skip another pool or fail")
    func forgedCursor() throws {
        let queue = try TestDatabase.queue()
        let ids = try queue.enqueue(batch: (0..<4).map { NewJob(image: .uri("https://x/\($0).jpg")) }).map(\.id)
        for forged in ["garbage", "cpu 1 0 99999999999999999999 1", "cpu x y z w", "gpu 1 0 \(ids[3]) 9999999999999"] {
            try queue.connection.execute("SELECT set_config('kiroku.claim_cursor', '\(forged)', false)")
            #expect(try claimIDs(queue, 1) == [ids[0]], "cursor \(forged)")
            try queue.connection.execute("UPDATE kiroku.jobs SET state = 'queued', worker_id = NULL, lease_expires_at = NULL, lease_token_hash = NULL WHERE id = \(ids[0])")
        }
    }
}
