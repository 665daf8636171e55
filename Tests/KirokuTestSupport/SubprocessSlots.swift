import Testing

/// A suite trait for the tests that run subprocesses (kiroku commands and workers, pg_dump, a
/// browser) or many threads of their own: at most two such tests run at once, the load the
/// machine's two cores took when each of them held a thread of the concurrency pool while it
/// waited. Waiting for a slot, or for a process, holds no thread, so the tests beside them (an
/// in-process HTTP server and its clients) keep the pool.
public struct SubprocessSlots: SuiteTrait, TestTrait, TestScoping {
    /// Applies to every test of the suite (never to the suite as a whole, whose tests would then
    /// wait for the slot their suite holds).
    public var isRecursive: Bool { true }

    /// A scope for each test, not for its suite.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> SubprocessSlots? {
        test.isSuite || testCase != nil ? nil : self
    }

    /// Runs the test once a slot is free, and frees it after.
    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await Self.slots.acquire()
        do {
            try await function()
        } catch {
            await Self.slots.release()
            throw error
        }
        await Self.slots.release()
    }

    private static let slots = AsyncSemaphore(count: 2)
}

extension SuiteTrait where Self == SubprocessSlots {
    /// At most two of these tests at once (see `SubprocessSlots`).
    public static var subprocesses: SubprocessSlots { SubprocessSlots() }
}

/// A counting semaphore whose waiters suspend instead of blocking a thread.
actor AsyncSemaphore {
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = count }

    /// Takes a slot, waiting in line for one if none is free.
    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Hands the slot to the first waiter, or frees it.
    func release() {
        if waiters.isEmpty {
            free += 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}
