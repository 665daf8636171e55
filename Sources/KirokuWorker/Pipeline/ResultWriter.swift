import KirokuQueue
import Logging

/// Writes a claimed batch's outcomes back in one transaction: results through the fenced
/// kiroku.complete_many, failures through kiroku.fail (permanent, or retried with backoff), and
/// unstarted jobs through kiroku.release. A lost connection is ridden out by the link and the
/// whole transaction run again; fencing makes the repeat harmless.
struct ResultWriter: Sendable {
    let link: DatabaseLink
    let book: LeaseBook
    let metrics: WorkerMetrics
    let logger: Logger

    /// Writes `outcomes` and adds them to `summary`.
    func write(_ outcomes: [(ClaimedJob, JobOutcome)], into summary: inout WorkerSummary) async throws {
        var completions: [JobCompletion] = []
        var failures: [(job: ClaimedJob, failure: JobFailure)] = []
        var handBacks: [JobLease] = []
        for (job, outcome) in outcomes {
            switch outcome {
            case .succeeded(let json): completions.append(JobCompletion(lease: job.lease, resultJSON: json))
            case .failed(let failure): failures.append((job, failure))
            case .handBack: handBacks.append(job.lease)
            }
        }
        let (completed, failed, unstarted) = (completions, failures, handBacks)
        let (stored, states, released) = try await link.run { queue throws(PostgresError) in
            try queue.connection.transaction { () throws(PostgresError) in
                let stored = try queue.complete(completed)
                var states: [JobState?] = []
                for (job, failure) in failed {
                    states.append(try queue.fail(job.lease, error: failure.reason, retryable: failure.retryable,
                                                 refused: failure.refused))
                }
                return (stored, states, try queue.release(unstarted))
            }
        }
        book.remove(outcomes.map(\.0.id))

        var batch = WorkerSummary()
        batch.succeeded = stored.filter { $0 }.count
        batch.fenced = stored.count - batch.succeeded + (handBacks.count - released)
        batch.handedBack = released
        for ((job, failure), state) in zip(failures, states) {
            let retried = state == .scheduled || state == .queued
            if retried {
                batch.retried += 1
            } else if state == nil {
                batch.fenced += 1
            } else {
                batch.failed += 1
            }
            logger.info("job failed", metadata: [
                "job": "\(job.id)", "attempt": "\(job.attempt)", "retry": "\(retried)", "reason": "\(failure.reason)",
                "detail": "\(failure.detail)"])
        }
        if batch.fenced > 0 {
            logger.warning("some outcomes were not stored: their leases had passed to another worker", metadata: ["jobs": "\(batch.fenced)"])
        }
        summary.add(batch)
        for (outcome, value) in batch.byOutcome where value > 0 { metrics.job(outcome).increment(by: value) }
    }
}
