// Queue benchmark harness: no-op jobs through the Swift queue API. Driven by
// Benchmarks/queue-bench.sh, which runs pgbench on the same SQL in the same run.
//
//   kiroku-queue-bench enqueue JOBS BATCH          bulk enqueue; prints jobs/s
//   kiroku-queue-bench drain BATCH SECONDS ID      claim+complete until SECONDS pass; prints jobs
//   kiroku-queue-bench pickup SAMPLES              idle enqueue-to-claim latency; prints p50/p99 ms
import Foundation
import KirokuQueue
import KirokuSupport
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
let url = ConnectionString.resolve(explicit: nil)

func connect() throws -> JobQueue { JobQueue(connection: try PostgresConnection(url)) }


switch arguments.first {
case "enqueue":
    let total = Int(arguments[1])!, batch = Int(arguments[2])!
    let queue = try connect()
    let payload: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 60)
    let start = ContinuousClock.now
    for first in stride(from: 0, to: total, by: batch) {
        _ = try queue.enqueue(batch: (first..<min(first + batch, total)).map { index in
            NewJob(image: .inline(payload), idempotencyKey: "bench-\(index)")
        })
    }
    let seconds = start.duration(to: .now).milliseconds / 1000
    print(String(format: "%.0f jobs/s (%.2f s)", Double(total) / seconds, seconds))

case "drain":
    let batch = Int(arguments[1])!, seconds = Double(arguments[2])!, workerID = arguments[3]
    let queue = try connect()
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    var done = 0
    while ContinuousClock.now < deadline {
        let jobs = try queue.claim(workerID: workerID, pool: "cpu", maxJobs: batch, lease: .seconds(300))
        if jobs.isEmpty { break }
        let stored = try queue.complete(jobs.map { JobCompletion(lease: $0.lease, resultJSON: "{}") })
        done += stored.filter { $0 }.count
    }
    print(done)

case "pickup":
    let samples = Int(arguments[1])!
    let enqueuedAt = Mutex<ContinuousClock.Instant?>(nil)
    let latencies = Mutex<[Double]>([])
    let listening = DispatchSemaphore(value: 0)
    let consumer = Thread {
        do {
            let queue = try connect()
            _ = try queue.waitForJobs(pool: "cpu", timeout: .zero)
            listening.signal()
            while latencies.withLock({ $0.count }) < samples {
                _ = try queue.waitForJobs(pool: "cpu", timeout: .seconds(5))
                let jobs = try queue.claim(workerID: "pickup", pool: "cpu", maxJobs: 1, lease: .seconds(60))
                let claimedAt = ContinuousClock.now
                guard let job = jobs.first, let sent = enqueuedAt.withLock({ $0 }) else { continue }
                latencies.withLock { $0.append(sent.duration(to: claimedAt).milliseconds) }
                _ = try queue.complete(job.lease, resultJSON: "{}")
            }
        } catch {
            FileHandle.standardError.write(Data("pickup consumer: \(error)\n".utf8))
            exit(1)
        }
    }
    consumer.start()
    listening.wait()
    let producer = try connect()
    for index in 0..<samples {
        Thread.sleep(forTimeInterval: 0.02)
        let before = latencies.withLock { $0.count }
        enqueuedAt.withLock { $0 = .now }
        _ = try producer.enqueue(NewJob(image: .uri("file:///pickup/\(index).jpg")))
        while latencies.withLock({ $0.count }) == before { Thread.sleep(forTimeInterval: 0.0005) }
    }
    let measured = latencies.withLock { $0 }
    print(String(format: "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms",
                 percentile(sorted: measured.sorted(), 0.5), percentile(sorted: measured.sorted(), 0.9), percentile(sorted: measured.sorted(), 0.99)))

default:
    FileHandle.standardError.write(Data("usage: kiroku-queue-bench enqueue JOBS BATCH | drain BATCH SECONDS ID | pickup SAMPLES\n".utf8))
    exit(2)
}
