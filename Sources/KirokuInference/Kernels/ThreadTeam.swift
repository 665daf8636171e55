import Foundation
import Synchronization

/// The threads one session's kernels split their loops across: the calling thread plus
/// `size - 1` helpers that stay awake, spinning, for a short while after each loop, so the next
/// kernel's loop starts at once instead of after a thread wake-up (tens of microseconds through
/// Dispatch: as long as a small kernel). Idle longer than that, the helpers sleep until the next
/// loop. Loop indices are claimed one at a time, so a slow thread does not hold the others up.
/// One loop at a time: a session is not for concurrent use.
final class ThreadTeam: Sendable {
    /// Threads working a loop, the caller included.
    let size: Int
    private let shared: Shared

    /// A team of `size` threads (1: every loop runs on the caller).
    init(size: Int, spin: Duration = .microseconds(200)) {
        self.size = max(size, 1)
        shared = Shared(helpers: self.size - 1, spin: spin)
        for _ in 0..<(self.size - 1) {
            let shared = shared
            Thread { shared.serve() }.start()
        }
    }

    deinit {
        shared.stop()
    }

    /// Runs `body(index)` for 0..<count across the team; returns when every index has run.
    func parallelFor(_ count: Int, _ body: (Int) -> Void) {
        guard size > 1, count > 1 else {
            for index in 0..<count { body(index) }
            return
        }
        withoutActuallyEscaping(body) { shared.run(count, $0) }
    }

    /// What the caller and the helpers share. The loop's body and count are written before the
    /// generation is bumped (release) and read after it is seen (acquire); the caller returns only
    /// after every helper has checked in for the generation, so no helper ever reads a stale body.
    private final class Shared: @unchecked Sendable {
        let helpers: Int
        let spin: Duration
        let generation = Atomic<Int>(0)
        let nextIndex = Atomic<Int>(0)
        let checkedIn = Atomic<Int>(0)
        let sleepers = Atomic<Int>(0)
        let stopping = Atomic<Bool>(false)
        let wakeUp = NSCondition()
        var body: ((Int) -> Void)?
        var count = 0

        init(helpers: Int, spin: Duration) {
            self.helpers = helpers
            self.spin = spin
        }

        func run(_ count: Int, _ body: @escaping (Int) -> Void) {
            self.body = body
            self.count = count
            nextIndex.store(0, ordering: .relaxed)
            checkedIn.store(0, ordering: .relaxed)
            generation.add(1, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                wakeUp.lock()
                wakeUp.broadcast()
                wakeUp.unlock()
            }
            work(body, count)
            while checkedIn.load(ordering: .acquiring) < helpers {}
            self.body = nil
        }

        func work(_ body: (Int) -> Void, _ count: Int) {
            while true {
                let index = nextIndex.add(1, ordering: .relaxed).oldValue
                guard index < count else { return }
                body(index)
            }
        }

        /// A helper's life: wait for a generation, work it, check in; sleep when idle.
        func serve() {
            var seen = 0
            while true {
                var idleSince = ContinuousClock.now
                var spins = 0
                while generation.load(ordering: .acquiring) == seen {
                    if stopping.load(ordering: .relaxed) { return }
                    spins &+= 1
                    guard spins & 255 == 0, idleSince.duration(to: .now) > spin else { continue }
                    sleep(until: seen)
                    idleSince = ContinuousClock.now
                }
                if stopping.load(ordering: .relaxed) { return }
                seen = generation.load(ordering: .acquiring)
                work(body!, count)
                checkedIn.add(1, ordering: .releasing)
            }
        }

        private func sleep(until seen: Int) {
            sleepers.add(1, ordering: .sequentiallyConsistent)
            wakeUp.lock()
            while generation.load(ordering: .sequentiallyConsistent) == seen && !stopping.load(ordering: .sequentiallyConsistent) {
                wakeUp.wait()
            }
            wakeUp.unlock()
            sleepers.subtract(1, ordering: .sequentiallyConsistent)
        }

        func stop() {
            stopping.store(true, ordering: .sequentiallyConsistent)
            wakeUp.lock()
            wakeUp.broadcast()
            wakeUp.unlock()
        }
    }
}
