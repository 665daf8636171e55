/// Parallel convolution branches summed into one convolution at load (RepVGG's and MobileOne's
/// re-parameterisation, which ONNX Runtime does not do): exporters write such models as trained,
/// a 3x3, a 1x1 and a batch-normalised identity read side by side and added.
extension GraphPasses {
    /// Add (or Sub) of two branches reading the same value `x`, each read only there: a Conv of
    /// `x` (constant weights, dilation 1), a BatchNormalization of `x` or `x` itself (the identity
    /// branch). When at least one is a Conv and their strides, groups, output channels and output
    /// grids agree, the pair becomes one Conv: the smaller kernel zero-padded into the larger, at
    /// the offset its padding gives, the identity as a unit kernel scaled per channel, weights and
    /// biases added (subtracted). Run to a fixed point with the channel arithmetic folded between
    /// merges, so that FastViT's x + γ·(mixer(x) − norm(x)) ends as one convolution.
    static func mergeParallelBranches(_ graph: inout Graph) {
        while mergeOneBranchPair(&graph) { foldChannelArithmeticIntoConv(&graph) }
    }

    private static func mergeOneBranchPair(_ graph: inout Graph) -> Bool {
        let readers = graph.readerCounts, producers = graph.producerIndices
        for (index, node) in graph.nodes.enumerated() where (node.op == "Add" || node.op == "Sub") && node.inputs.count == 2 {
            let sides = node.inputs.map { branch(of: $0, graph: graph, readers: readers, producers: producers) }
            guard let first = sides[0], let second = sides[1], first.x == second.x,
                  let merged = ConvolutionBranch.merged(first, second, subtracting: node.op == "Sub") else { continue }
            let weightKey = "\(node.name)#merged_weights", biasKey = "\(node.name)#merged_bias"
            graph.constants[weightKey] = .float(merged.weights)
            graph.constants[biasKey] = .float(Tensor(shape: [merged.bias.count], data: merged.bias))
            graph.nodes[index] = Node(name: "\(node.name)#merged", op: "Conv", inputs: [first.x, weightKey, biasKey], outputs: node.outputs,
                                      attributes: ["group": .int(merged.group), "strides": .ints(merged.strides), "pads": .ints(merged.pads),
                                                   "kernel_shape": .ints(Array(merged.weights.shape.suffix(2)))])
            let branchNodes = Set([first.node, second.node].compactMap { $0 })
            graph.nodes = graph.nodes.enumerated().filter { !branchNodes.contains($0.offset) }.map(\.element)
            return true
        }
        return false
    }

    /// The branch `value` is, if it is one: a Conv or BatchNormalization read only by the sum, or any other value (an identity of itself).
    private static func branch(of value: String, graph: Graph, readers: [String: Int], producers: [String: Int]) -> ConvolutionBranch? {
        guard let index = producers[value], readers[value] == 1 else { return .identity(of: value) }
        let node = graph.nodes[index]
        let constant = { (input: Int) in node.input(input).flatMap { graph.constants[$0]?.floatTensor } }
        switch node.op {
        case "Conv":
            let ones = { (key: String) in (node.ints(key) ?? []).allSatisfy { $0 == 1 } }
            guard let x = node.input(0), node.outputs.count == 1, node.fusedActivation == nil, ones("dilations"),
                  node.string("auto_pad", default: "NOTSET") == "NOTSET",
                  let weights = constant(1), weights.shape.count == 4, node.ints("kernel_shape").map({ $0 == Array(weights.shape.suffix(2)) }) ?? true,
                  node.input(2) == nil || constant(2)?.count == weights.shape[0] else { return nil }
            let pads = node.ints("pads") ?? [0, 0, 0, 0], strides = node.ints("strides") ?? [1, 1]
            guard pads.count == 4, strides.count == 2 else { return nil }
            return ConvolutionBranch(x: x, node: index, weights: weights, bias: constant(2)?.data ?? [Float](repeating: 0, count: weights.shape[0]),
                                     group: node.int("group", default: 1), strides: strides, pads: pads)
        case "BatchNormalization":
            guard !node.inTrainingMode, let x = node.input(0), node.outputs.count == 1 || node.outputs.dropFirst().allSatisfy({ readers[$0, default: 0] == 0 }),
                  let gamma = constant(1), let beta = constant(2), let mean = constant(3), let variance = constant(4),
                  [beta, mean, variance].allSatisfy({ $0.count == gamma.count }) else { return nil }
            let ones = Tensor(shape: [gamma.count, 1, 1, 1], data: [Float](repeating: 1, count: gamma.count))
            let scaled = batchNormFolded(weights: ones, bias: nil, gamma: gamma, beta: beta, mean: mean, variance: variance,
                                         epsilon: node.float("epsilon", default: 1e-5))
            return ConvolutionBranch(x: x, node: index, weights: scaled.weights, bias: scaled.bias.data, group: nil, strides: [1, 1],
                                     pads: [0, 0, 0, 0], isIdentity: true)
        default: return .identity(of: value)
        }
    }
}

/// One branch of a sum: a convolution of `x` (an identity branch is a 1x1 unit kernel scaled per
/// channel, its group that of the convolution it meets).
struct ConvolutionBranch {
    var x: String
    /// The node computing the branch (nil for `x` itself).
    var node: Int?
    /// [M, C/group, kh, kw]; an identity's [C, 1, 1, 1], a scale per channel (none: all 1).
    var weights: Tensor
    var bias: [Float]
    var group: Int?
    var strides: [Int]
    /// Top, left, bottom, right.
    var pads: [Int]
    var isIdentity = false

    static func identity(of x: String) -> ConvolutionBranch {
        ConvolutionBranch(x: x, node: nil, weights: Tensor(shape: [0, 1, 1, 1], data: []), bias: [], group: nil, strides: [1, 1],
                          pads: [0, 0, 0, 0], isIdentity: true)
    }

    /// The one convolution computing `a + b` (`a − b`), or nil when they do not line up.
    static func merged(_ a: ConvolutionBranch, _ b: ConvolutionBranch, subtracting: Bool) -> (weights: Tensor, bias: [Float], group: Int,
                                                                                               strides: [Int], pads: [Int])? {
        guard !(a.isIdentity && b.isIdentity) else { return nil }
        let conv = a.isIdentity ? b : a
        let channels = conv.weights.shape[0], group = conv.group ?? 1, perGroup = conv.weights.shape[1]
        guard group > 0, channels % group == 0 else { return nil }
        // An identity needs as many outputs as inputs in each group, and stride 1.
        let expanded = [a, b].map { branch -> ConvolutionBranch? in
            guard branch.isIdentity else { return branch }
            guard channels / group == perGroup, conv.strides == [1, 1] else { return nil }
            let scales = branch.weights.count == 0 ? [Float](repeating: 1, count: channels) : branch.weights.data
            guard scales.count == channels else { return nil }
            var weights = [Float](repeating: 0, count: channels * perGroup)
            for o in 0..<channels { weights[o * perGroup + o % perGroup] = scales[o] }
            return ConvolutionBranch(x: branch.x, node: branch.node, weights: Tensor(shape: [channels, perGroup, 1, 1], data: weights),
                                     bias: branch.bias.isEmpty ? [Float](repeating: 0, count: channels) : branch.bias,
                                     group: group, strides: [1, 1], pads: [0, 0, 0, 0])
        }
        guard let first = expanded[0], let second = expanded[1], first.group == second.group, first.strides == second.strides,
              first.weights.shape.prefix(2) == second.weights.shape.prefix(2) else { return nil }
        // Each kernel sits in the merged one at the offset its padding gives (top, left); the
        // padding after it must then come out equal, so that both give the same output grid. The
        // merged kernel is no larger than the larger of the two (the smaller inside it, as
        // re-parameterisation has it): a hostile model's pads cannot make it grow.
        var pads = [0, 0, 0, 0], sizes = [0, 0]
        for axis in 0..<2 {
            let before = max(first.pads[axis], second.pads[axis])
            let size = max(before - first.pads[axis] + first.weights.shape[2 + axis], before - second.pads[axis] + second.weights.shape[2 + axis])
            let after = [first, second].map { $0.pads[2 + axis] + size - $0.weights.shape[2 + axis] - (before - $0.pads[axis]) }
            guard after[0] == after[1], after[0] >= 0, size == max(first.weights.shape[2 + axis], second.weights.shape[2 + axis]) else { return nil }
            pads[axis] = before
            pads[2 + axis] = after[0]
            sizes[axis] = size
        }
        var weights = [Float](repeating: 0, count: channels * perGroup * sizes[0] * sizes[1])
        for (branch, sign) in [(first, Float(1)), (second, subtracting ? -1 : 1)] {
            let (kh, kw) = (branch.weights.shape[2], branch.weights.shape[3])
            let (top, left) = (pads[0] - branch.pads[0], pads[1] - branch.pads[1])
            for plane in 0..<(channels * perGroup) {
                for r in 0..<kh {
                    for c in 0..<kw {
                        weights[(plane * sizes[0] + top + r) * sizes[1] + left + c] += sign * branch.weights.data[(plane * kh + r) * kw + c]
                    }
                }
            }
        }
        let bias = zip(first.bias, second.bias).map { subtracting ? $0 - $1 : $0 + $1 }
        return (Tensor(shape: [channels, perGroup, sizes[0], sizes[1]], data: weights), bias, group, first.strides, pads)
    }
}
