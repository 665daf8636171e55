import Foundation
import Synchronization
import Testing

@testable import KirokuInference

@Suite("The thread team kernels split their loops across")
struct ThreadTeamTests {
    @Test("every index runs exactly once, loop after loop, whether the helpers are spinning or asleep", arguments: [1, 2, 4])
    func everyIndexOnce(size: Int) async throws {
        let team = ThreadTeam(size: size, spin: .microseconds(50))
        #expect(team.size == size)
        for (round, count) in [0, 1, 2, 3, 7, 64, 1000, 5, 2].enumerated() {
            let hits = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(count, 1))
            defer { hits.deallocate() }
            hits.initialize(repeating: 0)
            let threads = Mutex<Set<UInt>>([])
            let caller = UInt(pthread_self())
            team.parallelFor(count) { index in
                hits[index] += 1
                threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            }
            #expect(hits.prefix(count).allSatisfy { $0 == 1 }, "round \(round): \(count) indices")
            #expect(threads.withLock { $0 }.count <= size)
            if size == 1 && count > 0 { #expect(threads.withLock { $0 } == [caller], "a team of one has no helpers") }
            // Every other round, let the helpers fall asleep first.
            if round % 2 == 1 { try await Task.sleep(for: .milliseconds(2)) }
        }
    }

    @Test("the work of a loop is spread over the helpers too")
    func helpersWork() {
        let team = ThreadTeam(size: 2)
        let caller = UInt(pthread_self())
        let byHelpers = Atomic<Int>(0)
        for _ in 0..<50 {
            team.parallelFor(64) { _ in
                if UInt(pthread_self()) != caller { byHelpers.add(1, ordering: .relaxed) }
                // A few microseconds of work, so one thread cannot take every index alone.
                var x = 0.0
                for i in 0..<2000 { x += Double(i).squareRoot() }
                #expect(x > 0)
            }
        }
        #expect(byHelpers.load(ordering: .relaxed) > 0)
    }

    @Test("each thread starts on its own run of the indices (the second half is the helper's), so consecutive loops keep their parts on one core")
    func ownRuns() {
        let team = ThreadTeam(size: 2)
        var helped = 0
        for _ in 0..<50 {
            let firstOfHelper = Atomic<Int>(-1)
            team.parallelFor(64) { index, worker in
                if worker == 1 { _ = firstOfHelper.compareExchange(expected: -1, desired: index, ordering: .relaxed) }
                var x = 0.0
                for i in 0..<500 { x += Double(i).squareRoot() }
                #expect(x > 0)
            }
            let first = firstOfHelper.load(ordering: .relaxed)
            guard first >= 0 else { continue }
            helped += 1
            #expect(first >= 32, "the helper began at index \(first), in the caller's run")
        }
        #expect(helped > 0, "the helper never took an index")
    }

    @Test("a caller waiting long for a helper's index sleeps instead of spinning on its core")
    func callerSleeps() {
        let team = ThreadTeam(size: 2, spin: .microseconds(50))
        var helped = 0
        for _ in 0..<10 {
            let helperRan = Atomic<Bool>(false)
            let before = threadCPUSeconds()
            team.parallelFor(2) { _, worker in
                // The caller's index leaves the helper time to take its own before the caller could.
                guard worker != 0 else { usleep(2_000); return }
                helperRan.store(true, ordering: .relaxed)
                usleep(40_000)
            }
            let spent = threadCPUSeconds() - before
            guard helperRan.load(ordering: .relaxed) else { continue }
            helped += 1
            // Spinning through the helper's 40 ms would cost the caller about 40 ms of CPU.
            #expect(spent < 0.01, "the caller used \(spent) s of CPU while the helper slept 40 ms")
        }
        #expect(helped > 0, "the helper never took an index")
    }

    /// CPU time the calling thread has used.
    private func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    @Test("each worker number belongs to one thread, so per-worker scratch is never shared", arguments: [2, 3])
    func workerNumbers(size: Int) {
        let team = ThreadTeam(size: size)
        let owners = Mutex<[Int: Set<UInt>]>([:])
        for _ in 0..<20 {
            team.parallelFor(256) { _, worker in
                owners.withLock { _ = $0[worker, default: []].insert(UInt(pthread_self())) }
                var x = 0.0
                for i in 0..<500 { x += Double(i).squareRoot() }
                #expect(x > 0)
            }
        }
        let seen = owners.withLock { $0 }
        #expect(seen.keys.allSatisfy { (0..<size).contains($0) })
        #expect(seen.values.allSatisfy { $0.count == 1 }, "worker numbers to threads: \(seen)")
        #expect(seen[0] == [UInt(pthread_self())], "worker 0 is the caller")
    }
}
