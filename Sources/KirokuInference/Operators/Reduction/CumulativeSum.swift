/// CumSum along one axis: the input as [outer, length, inner], running sums along the length,
/// from its end with `reverse`, each without its own value with `exclusive`.
struct CumulativeSumKernel: Kernel {
    let outer: Int, length: Int, inner: Int
    let exclusive: Bool, reverse: Bool

    func run(_ context: KernelContext) {
        let x = context.inputs[0], y = context.outputs[0]
        context.team.parallelFor(outer) { o in
            let base = o * length * inner
            for step in 0..<length {
                let position = reverse ? length - 1 - step : step, previous = reverse ? position + 1 : position - 1
                let target = y + base + position * inner, source = x + base + position * inner
                guard step > 0 else {
                    if exclusive { target.update(repeating: 0, count: inner) } else { target.update(from: source, count: inner) }
                    continue
                }
                let before = y + base + previous * inner, added = exclusive ? x + base + previous * inner : source
                for i in 0..<inner { target[i] = before[i] + added[i] }
            }
        }
    }
}
