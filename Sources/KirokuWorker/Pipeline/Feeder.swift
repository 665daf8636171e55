import AsyncAlgorithms
import Foundation
import KirokuQueue
import KirokuVision
import Logging

/// The front of the pipeline: waits for work (LISTEN/NOTIFY, with a slow fallback poll), claims
/// batches sized by the BatchSizer, fetches their images concurrently and decodes them one by one
/// into the channel (decode and inference take turns on the classifier's queue). The channel holds
/// one job, so the next image is decoded as soon as the current one leaves inference, and the next
/// claim and its fetches run while the last image of a batch is classified.
struct Feeder: Sendable {
    let link: DatabaseLink
    let classifier: Classifier
    let fetcher: ImageFetcher
    let sizer: BatchSizer
    let book: LeaseBook
    let configuration: WorkerConfiguration
    let metrics: WorkerMetrics
    let isStopping: @Sendable () -> Bool

    /// The most images fetched at once for one batch.
    static let fetchConcurrency = 8

    /// Feeds the channel until told to stop (or, with --once, until nothing is claimable), then
    /// finishes it.
    func run(into channel: AsyncChannel<PreparedJob>) async throws {
        defer { channel.finish() }
        var batch = 0
        while !isStopping() {
            let (workerID, pool, lease, wanted) = (configuration.workerID, configuration.pool, configuration.lease, sizer.next)
            let bytes = configuration.claimBytes
            let jobs = try await link.run { queue throws(PostgresError) in
                try queue.claim(workerID: workerID, pool: pool, maxJobs: wanted, lease: lease, maxBytes: bytes)
            }
            guard !jobs.isEmpty else {
                if configuration.once { return }
                try await waitForWork()
                continue
            }
            book.add(jobs)
            metrics.batchSize.record(jobs.count)
            batch += 1
            let (claimedAt, claimedDate) = (ContinuousClock.now, Date())
            let fetched = await fetchAll(jobs)
            for (job, (bytes, fetchMs)) in zip(jobs, fetched) {
                var decodeMs = 0.0
                let input: PreparedJob.Input
                if isStopping() {
                    input = .handBack
                } else if !classifier.serves(model: job.model) {
                    // The model name is the producer's text: the stored category names neither it nor ours.
                    input = .failed(JobFailure(
                        reason: "model: the job asks for a model this pool's workers do not run",
                        detail: "job asks for model '\(job.model)'; workers of pool '\(pool)' run '\(classifier.modelName)'",
                        retryable: false))
                } else {
                    switch bytes {
                    case .failure(let error):
                        input = .failed(JobFailure(error))
                    case .success(let bytes):
                        do {
                            let prepared = try await classifier.prepare(bytes)
                            (input, decodeMs) = (.ready(prepared.input), prepared.milliseconds)
                        } catch {
                            input = .failed(JobFailure(error))
                        }
                    }
                }
                await channel.send(PreparedJob(job: job, batch: batch, batchSize: jobs.count, claimedAt: claimedAt,
                                               claimedDate: claimedDate, input: input, fetchMs: fetchMs, decodeMs: decodeMs))
            }
        }
    }

    /// Sleeps until the pool is notified of new jobs or the poll interval passes, waking every
    /// quarter second to notice a shutdown.
    private func waitForWork() async throws {
        let deadline = ContinuousClock.now + configuration.pollInterval
        let pool = configuration.pool
        while !isStopping() && ContinuousClock.now < deadline {
            let slice = min(.milliseconds(250), ContinuousClock.now.duration(to: deadline))
            let notified = try await link.run { queue throws(PostgresError) in try queue.waitForJobs(pool: pool, timeout: slice) }
            if notified { return }
        }
    }

    /// Every job's image bytes (or why not) with the milliseconds it took, in job order.
    private func fetchAll(_ jobs: [ClaimedJob]) async -> [(Result<[UInt8], FetchError>, Double)] {
        var results = [(Result<[UInt8], FetchError>, Double)](repeating: (.success([]), 0), count: jobs.count)
        await withTaskGroup(of: (Int, Result<[UInt8], FetchError>, Double).self) { group in
            var next = 0
            func start() {
                let (index, job) = (next, jobs[next])
                next += 1
                group.addTask {
                    let started = ContinuousClock.now
                    let result: Result<[UInt8], FetchError>
                    do throws(FetchError) {
                        result = .success(try await fetcher.bytes(of: job))
                    } catch {
                        result = .failure(error)
                    }
                    return (index, result, started.duration(to: .now).milliseconds)
                }
            }
            while next < min(jobs.count, Self.fetchConcurrency) { start() }
            for await (index, result, milliseconds) in group {
                results[index] = (result, milliseconds)
                if next < jobs.count { start() }
            }
        }
        return results
    }
}
