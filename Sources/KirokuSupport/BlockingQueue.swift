import Dispatch

/// A serial dispatch queue that runs blocking work (libpq calls, decoding, inference) for async
/// callers, off the cooperative thread pool, one piece at a time: what it owns is confined to it.
public struct BlockingQueue: Sendable {
    private let queue: DispatchQueue

    /// Creates a queue; `label` names its thread in debuggers and profiles.
    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the queue and returns its result to the awaiting task.
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }
}
