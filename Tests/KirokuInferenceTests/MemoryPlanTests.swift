import Testing
@testable import KirokuInference

/// The arena plan checked directly, as XNNPACK tests its memory planner: buffers live from their
/// first write to their last read, a freed buffer is reused, no step's output overlaps a buffer
/// it reads or one still to be read, and an alias is its base's memory.
@Suite("The memory plan")
struct MemoryPlanTests {
    /// A step reading `inputs` and writing `outputs` (the kernel is never run here).
    static func step(_ inputs: [Int], _ outputs: [Int]) -> Step {
        Step(description: StepDescription(kind: .node, operators: ["Test"], nodes: ["test"], layout: .nchw), kernel: CopyKernel(count: 0),
             inputs: inputs.map { .value($0) }, outputs: outputs)
    }

    /// The floats of value `id` in the arena.
    static func range(_ plan: MemoryPlan, _ id: Int, _ shapes: [[Int]]) -> Range<Int> {
        plan.offsets[id]..<(plan.offsets[id] + shapes[id].reduce(1, *))
    }

    /// Every pair of values alive at once (by the steps' reads and writes) occupies disjoint floats.
    static func checkNoOverlap(_ plan: MemoryPlan, steps: [Step], shapes: [[Int]], inputs: [Int], outputs: [Int],
                               aliases: [Int: (base: Int, offset: Int)] = [:]) {
        let owner = { (id: Int) in aliases[id]?.base ?? id }
        var first = [Int: Int](), last = [Int: Int]()
        for id in inputs { first[id] = -1 }
        for (index, step) in steps.enumerated() {
            for case .value(let id) in step.inputs { last[owner(id)] = index }
            for id in step.outputs.map(owner) {
                first[id] = min(first[id] ?? index, index)
                last[id] = max(last[id] ?? index, index)
            }
        }
        for id in inputs + outputs { last[owner(id)] = .max }
        let owners = Array(first.keys)
        for a in owners {
            for b in owners where a < b {
                let liveTogether = first[a]! <= last[b]! && first[b]! <= last[a]!
                guard liveTogether else { continue }
                let (ra, rb) = (range(plan, a, shapes), range(plan, b, shapes))
                #expect(!ra.overlaps(rb), "values \(a) \(ra) and \(b) \(rb) are alive together but share floats")
            }
        }
    }

    @Test("a chain reuses buffers: at most two alive at once, the arena no bigger than the two largest")
    func chainReuses() {
        // 0 -> 1 -> 2 -> 3 -> 4, sizes 100, 200, 100, 200, 10.
        let shapes = [[100], [200], [100], [200], [10]]
        let steps = (0..<4).map { Self.step([$0], [$0 + 1]) }
        let plan = MemoryPlan(steps: steps, shapes: shapes, inputs: [0], outputs: [4], aliases: [:])
        #expect(plan.unplannedFloats == 610)
        #expect(plan.arenaFloats <= 100 + 200 + 100, "the input lives throughout; the rest share: \(plan.arenaFloats)")
        #expect(plan.arenaFloats < plan.unplannedFloats)
        Self.checkNoOverlap(plan, steps: steps, shapes: shapes, inputs: [0], outputs: [4])
    }

    @Test("a value read later (a skip connection) stays alive past the steps between; no output overlaps a live input")
    func skipConnection() {
        // 1 = f(0); 2 = g(1); 3 = h(2); 4 = add(3, 1): value 1 must survive steps 2 and 3.
        let shapes = [[64], [64], [64], [64], [64]]
        let steps = [Self.step([0], [1]), Self.step([1], [2]), Self.step([2], [3]), Self.step([3, 1], [4])]
        let plan = MemoryPlan(steps: steps, shapes: shapes, inputs: [0], outputs: [4], aliases: [:])
        #expect(!Self.range(plan, 1, shapes).overlaps(Self.range(plan, 3, shapes)))
        #expect(!Self.range(plan, 1, shapes).overlaps(Self.range(plan, 2, shapes)))
        #expect(!Self.range(plan, 4, shapes).overlaps(Self.range(plan, 3, shapes)), "an output never overlaps what its step reads")
        Self.checkNoOverlap(plan, steps: steps, shapes: shapes, inputs: [0], outputs: [4])
    }

    @Test("an alias is its base's memory at its offset, and keeps the base alive until the alias's last read")
    func aliases() {
        // Values 2 and 3 are the two halves of 4 (a Concat computed in place); 5 reads 2 after 4 is written.
        let shapes = [[8], [8], [8], [8], [16], [8], [8]]
        let aliases: [Int: (base: Int, offset: Int)] = [2: (4, 0), 3: (4, 8)]
        let steps = [Self.step([0], [1]), Self.step([1], [2]), Self.step([1], [3]), Self.step([2, 3], [4]), Self.step([2], [5]),
                     Self.step([5], [6])]
        let plan = MemoryPlan(steps: steps, shapes: shapes, inputs: [0], outputs: [6], aliases: aliases)
        #expect(plan.offsets[2] == plan.offsets[4] && plan.offsets[3] == plan.offsets[4] + 8)
        #expect(!Self.range(plan, 5, shapes).overlaps(Self.range(plan, 4, shapes)), "4 is alive while 5 is written (5 reads its alias 2)")
        Self.checkNoOverlap(plan, steps: steps, shapes: shapes, inputs: [0], outputs: [6], aliases: aliases)
    }

    @Test("random graphs: no two values alive together share floats")
    func randomGraphs() {
        var state: UInt64 = 20_261_124
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        for _ in 0..<200 {
            let count = 3 + next(12)
            let shapes = (0..<count).map { _ in [1 + next(50)] }
            var steps: [Step] = []
            for id in 1..<count {
                let reads = Set((0..<(1 + next(3))).map { _ in next(id) })
                steps.append(Self.step(Array(reads), [id]))
            }
            let plan = MemoryPlan(steps: steps, shapes: shapes, inputs: [0], outputs: [count - 1], aliases: [:])
            #expect(plan.offsets.allSatisfy { $0 >= 0 })
            Self.checkNoOverlap(plan, steps: steps, shapes: shapes, inputs: [0], outputs: [count - 1])
        }
    }
}
