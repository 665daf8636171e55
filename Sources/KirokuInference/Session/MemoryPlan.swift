/// Offsets of every run-time value in one arena, reusing a buffer once its last reader has run.
/// An alias (part of another value) has no buffer of its own: a read of it is a read of the
/// value it is part of, and its offset is within that value's.
struct MemoryPlan {
    private(set) var offsets: [Int]
    private(set) var arenaFloats = 0
    let unplannedFloats: Int

    init(steps: [Step], shapes: [[Int]], inputs: [Int], outputs: [Int], aliases: [Int: (base: Int, offset: Int)]) {
        let sizes = shapes.map { max($0.reduce(1, *), 1) }
        unplannedFloats = sizes.reduce(0, +)
        offsets = [Int](repeating: -1, count: shapes.count)
        let owner = { (id: Int) in aliases[id]?.base ?? id }
        // The values each step reads or writes, by owner; the last step that does, for each
        // value (an owner whose aliases are written by several steps lives from the first to
        // the last of them at least); the input and outputs live for the whole run.
        let touched = steps.map { step in
            Set(step.inputs.compactMap { operand -> Int? in if case .value(let id) = operand { owner(id) } else { nil } } + step.outputs.map(owner))
        }
        var lastUse = [Int](repeating: -1, count: shapes.count)
        for (index, ids) in touched.enumerated() { ids.forEach { lastUse[$0] = index } }
        for id in outputs + inputs { lastUse[owner(id)] = .max }
        var free: [(offset: Int, size: Int)] = []

        func place(_ id: Int) {
            let size = sizes[id]
            if let best = free.indices.filter({ free[$0].size >= size }).min(by: { free[$0].size < free[$1].size }) {
                offsets[id] = free[best].offset
                if free[best].size > size {
                    free[best] = (free[best].offset + size, free[best].size - size)
                } else {
                    free.remove(at: best)
                }
            } else if let last = free.indices.first(where: { free[$0].offset + free[$0].size == arenaFloats }) {
                // The free block at the end of the arena grows to fit.
                offsets[id] = free[last].offset
                arenaFloats = free[last].offset + size
                free.remove(at: last)
            } else {
                offsets[id] = arenaFloats
                arenaFloats += size
            }
        }

        func release(_ id: Int) {
            free.append((offsets[id], sizes[id]))
            free.sort { $0.offset < $1.offset }
            var merged: [(offset: Int, size: Int)] = []
            for block in free {
                if let previous = merged.last, previous.offset + previous.size == block.offset {
                    merged[merged.count - 1].size += block.size
                } else {
                    merged.append(block)
                }
            }
            free = merged
        }

        inputs.forEach(place)
        for (index, step) in steps.enumerated() {
            // Placed before anything this step reads is released: no output overlaps an input.
            for id in step.outputs.map(owner) where offsets[id] < 0 { place(id) }
            for id in touched[index] where lastUse[id] == index { release(id) }
        }
        for (id, alias) in aliases { offsets[id] = offsets[alias.base] + alias.offset }
    }
}
