import AsyncAlgorithms
import Foundation
import KirokuQueue
import Logging

/// The back of the pipeline: classifies each prepared job as it arrives, builds its result
/// document, and writes each claimed batch's outcomes in one transaction once all its jobs are in.
/// After a shutdown begins, jobs not yet started are handed back instead of classified.
struct InferenceLoop: Sendable {
    let writer: ResultWriter
    let classifier: Classifier
    let sizer: BatchSizer
    let speed: SpeedMeter
    let configuration: WorkerConfiguration
    let metrics: WorkerMetrics
    let isStopping: @Sendable () -> Bool

    /// Consumes the channel until the feeder finishes it; returns what became of the jobs.
    func run(from channel: AsyncChannel<PreparedJob>) async throws -> WorkerSummary {
        var summary = WorkerSummary()
        var pending: [Int: [(ClaimedJob, JobOutcome)]] = [:]
        var batchStarted: [Int: ContinuousClock.Instant] = [:]
        for await prepared in channel {
            if batchStarted[prepared.batch] == nil { batchStarted[prepared.batch] = .now }
            let outcome = await outcome(of: prepared)
            pending[prepared.batch, default: []].append((prepared.job, outcome))
            if pending[prepared.batch]!.count == prepared.batchSize {
                let outcomes = pending.removeValue(forKey: prepared.batch)!
                try await writer.write(outcomes, into: &summary)
                let started = batchStarted.removeValue(forKey: prepared.batch)!
                let worked = outcomes.filter { if case .handBack = $0.1 { false } else { true } }.count
                speed.record(images: worked, seconds: started.duration(to: .now).seconds)
            }
        }
        // Only when the feeder stopped mid-batch (an error): store what is done; the rest of
        // that batch returns through its leases.
        for batch in pending.keys.sorted() { try await writer.write(pending[batch]!, into: &summary) }
        return summary
    }

    private func outcome(of prepared: PreparedJob) async -> JobOutcome {
        switch prepared.input {
        case .handBack:
            return .handBack
        case .failed(let failure):
            return .failed(failure)
        case .ready(let input):
            if isStopping() { return .handBack }
            let (classification, inferenceMs) = await classifier.classify(input, top: configuration.topK)
            let finished = ContinuousClock.now
            sizer.record((inferenceMs + prepared.decodeMs) / 1000)
            let timings = JobResult.Timings(
                queueWaitMs: max(0, prepared.claimedDate.timeIntervalSince(prepared.job.enqueuedAt) * 1000),
                fetchMs: prepared.fetchMs,
                decodeMs: prepared.decodeMs,
                inferenceMs: inferenceMs,
                totalMs: prepared.claimedAt.duration(to: finished).milliseconds)
            record(timings)
            let result = JobResult(
                top: classification.top, food: classification.food, foodScore: classification.foodScore,
                model: .init(name: classifier.modelName, sha256: classifier.modelHash), decode: classifier.decodeScale.rawValue,
                precision: classifier.integerLayers.precision,
                pool: configuration.pool, workerId: configuration.workerID, attempt: prepared.job.attempt,
                timings: timings)
            return .succeeded(resultJSON: result.json())
        }
    }

    private func record(_ timings: JobResult.Timings) {
        for (stage, milliseconds) in [("queue_wait", timings.queueWaitMs), ("fetch", timings.fetchMs), ("decode", timings.decodeMs),
                                      ("inference", timings.inferenceMs), ("total", timings.totalMs)] {
            metrics.stage(stage).recordNanoseconds(Int64(milliseconds * 1_000_000))
        }
    }
}
