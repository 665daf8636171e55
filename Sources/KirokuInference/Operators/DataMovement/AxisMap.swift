/// A copy in which each output index along each axis reads one input index along the same axis,
/// or a fill value: Slice (steps of any sign), Pad in every mode, Expand, Tile, Gather along an
/// axis with indices known at load, and each output of Split are all one such map.
struct AxisMap: Equatable {
    /// The input's dimensions (an Expand's input with leading 1s added to the output's rank).
    let inputShape: [Int]
    /// For each axis, the input index that each output index reads; -1 reads the fill value.
    let sources: [[Int]]
    /// The result's dimensions: the map's output, regrouped where an operator says so (a Gather's
    /// index dimensions in place of its axis); the same number of elements.
    let resultShape: [Int]

    init(inputShape: [Int], sources: [[Int]], resultShape: [Int]? = nil) {
        precondition(inputShape.count == sources.count, "one index map per axis")
        self.inputShape = inputShape
        self.sources = sources
        self.resultShape = resultShape ?? sources.map(\.count)
    }

    /// The output's dimensions along the input's axes.
    var outputShape: [Int] { sources.map(\.count) }

    /// The map applied to row-major values, for constants at load.
    func apply<T>(_ values: [T], fill: T) -> [T] {
        let inputStrides = strides(of: inputShape), count = outputShape.reduce(1, *)
        var result: [T] = []
        result.reserveCapacity(count)
        var index = [Int](repeating: 0, count: sources.count)
        for _ in 0..<count {
            var offset = 0
            for axis in index.indices {
                let source = sources[axis][index[axis]]
                if source < 0 { offset = -1; break }
                offset += source * inputStrides[axis]
            }
            result.append(offset < 0 ? fill : values[offset])
            for axis in index.indices.reversed() {
                index[axis] += 1
                if index[axis] < sources[axis].count { break }
                index[axis] = 0
            }
        }
        return result
    }

    /// Where the output lies in the input when it is one run of it (single indices on the axes
    /// before one, consecutive ones there, every index after): its first element's offset; nil
    /// otherwise, or for an empty output.
    var contiguousOffset: Int? {
        let inner = sources.indices.reversed().first { sources[$0] != Self.identity(inputShape[$0]) } ?? 0
        guard sources.allSatisfy({ !$0.isEmpty && $0[0] >= 0 }), resultShape == outputShape,
              sources[..<inner].allSatisfy({ $0.count == 1 }),
              sources[inner].indices.allSatisfy({ sources[inner][$0] == sources[inner][0] + $0 }) else { return nil }
        let inputStrides = strides(of: inputShape)
        return sources.indices.reduce(0) { $0 + sources[$1][0] * inputStrides[$1] }
    }

    /// The indices 0, 1, ... of an axis read as they are.
    static func identity(_ count: Int) -> [Int] { Array(0..<count) }
}

/// Runs an AxisMap on float data: the output in rows (all axes but the last), each row's input
/// offset found from the outer axes' maps, and the last axis as runs of consecutive input
/// elements or of fill, each one copy.
struct AxisMapKernel: Kernel {
    let fill: Float
    /// For each axis but the last, the input offset each output index adds (-1: the row is fill).
    let outerOffsets: [[Int]]
    let rowCount: Int
    /// Runs along the last axis: where they start in the output row, in the input row (-1: fill), and their length.
    let runs: [(output: Int, source: Int, count: Int)]
    let rowLength: Int
    /// Where the last axis reads evenly spaced input values, every `step`-th from `source` on (a
    /// Slice with a step, as RoPE's pairs are taken apart; a reversal; an Expand, step 0): the row
    /// is read value by value, not run by run of one.
    let strided: (source: Int, step: Int)?

    init(map: AxisMap, fill: Float) {
        self.fill = fill
        // A scalar is one row of one element.
        let inputShape = map.inputShape.isEmpty ? [1] : map.inputShape, sources = map.sources.isEmpty ? [[0]] : map.sources
        let inputStrides = strides(of: inputShape)
        outerOffsets = sources.dropLast().enumerated().map { axis, map in map.map { $0 < 0 ? -1 : $0 * inputStrides[axis] } }
        rowCount = outerOffsets.reduce(1) { $0 * $1.count }
        var runs: [(output: Int, source: Int, count: Int)] = []
        for (position, source) in sources[sources.count - 1].enumerated() {
            if let last = runs.last, source < 0 ? last.source < 0 : last.source >= 0 && last.source + last.count == source {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((position, max(source, -1), 1))
            }
        }
        self.runs = runs
        let last = sources[sources.count - 1]
        rowLength = last.count
        strided = runs.count > 1 && last.allSatisfy({ $0 >= 0 }) && zip(last, last.dropFirst()).allSatisfy({ $1 - $0 == last[1] - last[0] })
            ? (last[0], last[1] - last[0]) : nil
    }

    /// Rows are shared out over the threads in blocks of about 16K elements.
    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        let block = max(1, 16 * 1024 / max(rowLength, 1)), blocks = (rowCount + block - 1) / block
        context.team.parallelFor(blocks) { index in
            for row in (index * block)..<min(rowCount, (index + 1) * block) {
                let output = y + row * rowLength
                var rest = row, base = 0
                for offsets in outerOffsets.reversed() {
                    let offset = offsets[rest % offsets.count]
                    rest /= offsets.count
                    if offset < 0 { base = -1; break }
                    base += offset
                }
                guard base >= 0 else {
                    output.update(repeating: fill, count: rowLength)
                    continue
                }
                if let strided {
                    for j in 0..<rowLength { output[j] = x[base + strided.source + j * strided.step] }
                    continue
                }
                for run in runs {
                    if run.source < 0 {
                        (output + run.output).update(repeating: fill, count: run.count)
                    } else {
                        (output + run.output).update(from: x + base + run.source, count: run.count)
                    }
                }
            }
        }
    }
}
