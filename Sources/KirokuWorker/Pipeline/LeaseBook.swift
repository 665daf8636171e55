import KirokuQueue
import Synchronization

/// The jobs this worker holds leases on (claimed, not yet finished): what the heartbeat renews
/// and what a shutdown must account for.
final class LeaseBook: Sendable {
    private let held = Mutex<[Int64: JobLease]>([:])

    /// Records claimed jobs.
    func add(_ jobs: [ClaimedJob]) {
        held.withLock { held in for job in jobs { held[job.id] = job.lease } }
    }

    /// Forgets finished (or handed back) jobs.
    func remove<IDs: Sequence>(_ ids: IDs) where IDs.Element == Int64 {
        held.withLock { held in for id in ids { held[id] = nil } }
    }

    /// The held leases.
    var leases: [JobLease] { held.withLock { Array($0.values) } }
}
