import Foundation
import Synchronization

/// The threads one session's kernels split their loops across: the calling thread plus
/// `size - 1` helpers that stay awake, spinning, for a short while after each loop, so the next
/// kernel's loop starts at once instead of after a thread wake-up (tens of microseconds through
/// Dispatch: as long as a small kernel). Idle longer than that, the helpers sleep until the next
/// loop. Each thread owns an equal run of a loop's indices, claims them a few at a time from its
/// own counter (apart from the others' lines), then takes what is left of the others' runs: a slow
/// thread does not hold the others up, and each thread works the same part of consecutive loops
/// (what it wrote, the next layer reads from its own cache: MobileNetV3-Small 0.93x the time of
/// one shared counter at 2 threads). A loop ends when its indices are done: a helper the system
/// has not scheduled yet (a core taken by another process) is not waited for; it finds the loop
/// closed and skips it. The caller, with nothing left to claim, spins for the helpers' last ones
/// as long as an idle helper spins, then sleeps until they finish (with a batch's images shared
/// between threads it may wait a whole image, on a core that the helper, or the worker's decoding,
/// may need).
/// One loop at a time: a session is not for concurrent use.
final class ThreadTeam: Sendable {
    /// Threads working a loop, the caller included.
    let size: Int
    private let shared: Shared

    /// A team of `size` threads (1: every loop runs on the caller).
    init(size: Int, spin: Duration = .microseconds(200)) {
        self.size = max(size, 1)
        shared = Shared(helpers: self.size - 1, spin: spin)
        for worker in 1..<self.size {
            let shared = shared
            Thread { shared.serve(worker: worker) }.start()
        }
    }

    deinit {
        shared.stop()
    }

    /// Runs `body(index)` for 0..<count across the team; returns when every index has run.
    func parallelFor(_ count: Int, _ body: (Int) -> Void) {
        parallelFor(count) { index, _ in body(index) }
    }

    /// Runs `body(index, worker)` for 0..<count across the team, `worker` in 0..<size naming the
    /// thread (0 the caller): per-thread scratch without a lock. Returns when every index has run.
    func parallelFor(_ count: Int, _ body: (_ index: Int, _ worker: Int) -> Void) {
        guard size > 1, count > 1 else {
            for index in 0..<count { body(index, 0) }
            return
        }
        withoutActuallyEscaping(body) { shared.run(count, $0) }
    }

    /// What the caller and the helpers share. The loop's body and count, the threads' counters and
    /// `done` are set before `open` is set to the next generation and the generation bumped; a
    /// helper enters (counted in `entered`) and then works only if `open` still holds the
    /// generation it saw (so its claims are of that loop). The caller, its indices all done,
    /// closes the loop (`open` = 0) and waits for the helpers inside to leave: no helper reads the
    /// body after the caller returns, and none that came late is waited for.
    private final class Shared: @unchecked Sendable {
        let spin: Duration
        let generation = Atomic<Int>(0)
        let open = Atomic<Int>(0)
        /// Per thread, the next index of its run to claim.
        let next: [Counter]
        let done = Atomic<Int>(0)
        let entered = Atomic<Int>(0)
        let sleepers = Atomic<Int>(0)
        /// Whether the caller sleeps on `finished` until the last index is done.
        let callerWaits = Atomic<Bool>(false)
        let finished = NSCondition()
        let stopping = Atomic<Bool>(false)
        let wakeUp = NSCondition()
        var body: ((Int, Int) -> Void)?
        var count = 0

        init(helpers: Int, spin: Duration) {
            self.spin = spin
            next = (0...helpers).map { _ in Counter() }
        }

        func run(_ count: Int, _ body: @escaping (Int, Int) -> Void) {
            self.body = body
            self.count = count
            for (run, counter) in next.enumerated() { counter.value.store(start(of: run, count), ordering: .sequentiallyConsistent) }
            done.store(0, ordering: .sequentiallyConsistent)
            // Opened before it is announced: a helper that sees the new generation finds it open.
            let current = generation.load(ordering: .relaxed) + 1
            open.store(current, ordering: .sequentiallyConsistent)
            generation.store(current, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                wakeUp.lock()
                wakeUp.broadcast()
                wakeUp.unlock()
            }
            work(body, count, worker: 0)
            awaitLastIndex(count)
            open.store(0, ordering: .sequentiallyConsistent)
            while entered.load(ordering: .sequentiallyConsistent) > 0 {}
            self.body = nil
        }

        /// Claims indices a few at a time (about 16 claims per thread per loop where the loop is
        /// long: a loop over 1,152 small channels should not make 1,152 atomic adds), first from the
        /// thread's own run, then from the others', and runs them; counts them done once, at the end
        /// (an add on a line every thread writes).
        func work(_ body: (Int, Int) -> Void, _ count: Int, worker: Int) {
            let runs = next.count, grain = max(1, count / (runs * 16))
            var ran = 0
            for offset in 0..<runs {
                let run = (worker + offset) % runs, end = start(of: run + 1, count)
                while true {
                    let first = next[run].value.add(grain, ordering: .relaxed).oldValue
                    guard first < end else { break }
                    let last = min(first + grain, end)
                    for index in first..<last { body(index, worker) }
                    ran += last - first
                }
            }
            // Sequentially consistent with the caller's `callerWaits`: one of the two sees the other.
            guard ran > 0, done.add(ran, ordering: .sequentiallyConsistent).newValue == count,
                  callerWaits.load(ordering: .sequentiallyConsistent) else { return }
            finished.lock()
            finished.broadcast()
            finished.unlock()
        }

        /// The first index of thread `run`'s run of a loop of `count` (of the last run's end, for `run` = threads).
        private func start(of run: Int, _ count: Int) -> Int { run * count / next.count }

        /// The caller's wait for the loop's last indices: spinning up to `spin`, then asleep until
        /// the helper that finishes the last one wakes it.
        private func awaitLastIndex(_ count: Int) {
            let since = ContinuousClock.now
            var spins = 0
            while done.load(ordering: .acquiring) < count {
                spins &+= 1
                guard spins & 255 == 0, since.duration(to: .now) > spin else { continue }
                finished.lock()
                callerWaits.store(true, ordering: .sequentiallyConsistent)
                while done.load(ordering: .sequentiallyConsistent) < count { finished.wait() }
                callerWaits.store(false, ordering: .sequentiallyConsistent)
                finished.unlock()
            }
        }

        /// A helper's life: wait for a generation, work it if it is still open; sleep when idle.
        func serve(worker: Int) {
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
                seen = generation.load(ordering: .sequentiallyConsistent)
                entered.add(1, ordering: .sequentiallyConsistent)
                if open.load(ordering: .sequentiallyConsistent) == seen { work(body!, count, worker: worker) }
                entered.subtract(1, ordering: .sequentiallyConsistent)
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

/// An atomic counter followed by 128 unused bytes (a cache line on Apple silicon, a pair of
/// lines where x86 prefetches in pairs), so that threads claiming from their own counters do not
/// invalidate each other's lines.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
    private let padding = SIMD16<Int>.zero
}
