import Foundation
import KirokuSupport
import Logging
import ServiceLifecycle

/// The worker as a swift-service-lifecycle service: a graceful shutdown (SIGTERM, SIGINT) stops
/// claiming, finishes the jobs in inference and hands back the rest. If that takes longer than
/// the grace period the process exits anyway, with status 1; the jobs still running return to the
/// queue when their leases expire, so nothing is lost.
public struct WorkerService: Service {
    /// The worker it runs.
    public let worker: Worker
    private let summary: SharedValue<WorkerSummary?>

    /// Wraps a worker.
    public init(worker: Worker) {
        self.worker = worker
        self.summary = SharedValue(nil)
    }

    /// What the worker did, once it has returned.
    public var result: WorkerSummary? { summary.value }

    public func run() async throws {
        let worker = worker
        let grace = worker.configuration.gracePeriod
        let value = try await withGracefulShutdownHandler {
            try await worker.run()
        } onGracefulShutdown: {
            worker.stop()
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: grace.seconds)
                Logger(label: "kiroku.worker").error("grace period over before the drain finished; exiting (unfinished jobs return when their leases expire)",
                                                     metadata: ["grace_s": "\(grace.seconds)"])
                exit(1)
            }
        }
        summary.withLock { $0 = value }
    }
}

