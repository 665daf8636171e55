import Synchronization

/// A value shared between threads or tasks behind a lock: results written by concurrentPerform's
/// threads, or state crossing a service's value-type boundary.
public final class SharedValue<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    /// Holds `value`.
    public init(_ value: Value) {
        storage = Mutex(value)
    }

    /// Runs `body` with the value, exclusively.
    public func withLock<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock { try body(&$0) }
    }

    /// The value now.
    public var value: Value { storage.withLock { $0 } }
}
