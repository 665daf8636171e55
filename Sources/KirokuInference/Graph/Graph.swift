/// An attribute value of a node.
enum Attribute: Equatable {
    case int(Int)
    case ints([Int])
    case float(Float)
    case floats([Float])
    case string(String)
    case strings([String])
    case tensor(Constant)
    /// An activation fused into this node's epilogue by the optimizer.
    case activation(Activation)
}

/// One operator application.
struct Node: Equatable {
    /// The node's name in the model (or a generated "#index" when it has none).
    var name: String
    /// The ONNX operator type, e.g. "Conv".
    var op: String
    /// Input value names; "" marks an omitted optional input.
    var inputs: [String]
    /// Output value names.
    var outputs: [String]
    var attributes: [String: Attribute]

    func int(_ key: String, default value: Int) -> Int {
        if case .int(let v) = attributes[key] { return v }
        return value
    }

    func ints(_ key: String) -> [Int]? {
        if case .ints(let v) = attributes[key] { return v }
        return nil
    }

    func float(_ key: String, default value: Float) -> Float {
        if case .float(let v) = attributes[key] { return v }
        return value
    }

    func floats(_ key: String) -> [Float]? {
        if case .floats(let v) = attributes[key] { return v }
        return nil
    }

    func string(_ key: String, default value: String) -> String {
        if case .string(let v) = attributes[key] { return v }
        return value
    }

    func strings(_ key: String) -> [String]? {
        if case .strings(let v) = attributes[key] { return v }
        return nil
    }

    /// A BatchNormalization in training mode (any training_mode but 0, as ONNX Runtime reads it):
    /// it normalises by its input's own statistics, not the running ones.
    var inTrainingMode: Bool { op == "BatchNormalization" && int("training_mode", default: 0) != 0 }

    /// The activation a load-time pass fused into this node's epilogue, if any.
    var fusedActivation: Activation? {
        if case .activation(let activation) = attributes[IRAttribute.fusedActivation] { activation } else { nil }
    }

    /// The input at `index`, or nil when absent or omitted ("").
    func input(_ index: Int) -> String? {
        index < inputs.count && !inputs[index].isEmpty ? inputs[index] : nil
    }

    /// "Conv node 'conv1'", for messages.
    var label: String { "\(op) node '\(name)'" }
}

/// A graph input: its name and dimensions (nil for a symbolic dimension such as the batch).
struct GraphInput: Equatable {
    var name: String
    var dimensions: [Int?]
}

/// A model's computation graph, in topological order, with its constants.
struct Graph {
    var name: String
    var nodes: [Node]
    var inputs: [GraphInput]
    var outputs: [String]
    /// Initializers and Constant nodes' values, by value name.
    var constants: [String: Constant]
}

extension Graph {
    /// How many times each value is read (by nodes and as a graph output).
    var readerCounts: [String: Int] {
        var counts: [String: Int] = [:]
        for node in nodes { for input in node.inputs where !input.isEmpty { counts[input, default: 0] += 1 } }
        for output in outputs { counts[output, default: 0] += 1 }
        return counts
    }

    /// Every value name the graph has: its inputs, constants and every node's inputs and outputs
    /// (what a pass naming new values must not take).
    /// `base`, or `base` with a number after it, whichever `taken` does not hold; added to `taken`.
    static func freshName(_ base: String, taken: inout Set<String>) -> String {
        var name = base, number = 1
        while taken.contains(name) {
            name = "\(base)#\(number)"
            number += 1
        }
        taken.insert(name)
        return name
    }

    var valueNames: Set<String> {
        Set(inputs.map(\.name)).union(constants.keys).union(nodes.flatMap { $0.inputs + $0.outputs })
    }

    /// The index of the node that computes each value.
    var producerIndices: [String: Int] {
        Dictionary(nodes.enumerated().flatMap { index, node in node.outputs.map { ($0, index) } }, uniquingKeysWith: { first, _ in first })
    }

    /// The weights [out, in, 1, 1] of a pointwise convolution (1x1, stride 1, unpadded, one group,
    /// constant weights, a constant bias of one value per output channel if any), whose every
    /// attribute is the default or means it; nil for any other node (it stays as it is, to compile
    /// or fail on its own).
    func pointwiseWeights(_ node: Node) -> Tensor? {
        let ones = { (key: String) in (node.ints(key) ?? []).allSatisfy { $0 == 1 } }
        guard node.op == "Conv", node.input(0) != nil, node.int("group", default: 1) == 1, node.outputs.count == 1,
              ones("strides"), ones("dilations"), ones("kernel_shape"), (node.ints("pads") ?? []).allSatisfy({ $0 == 0 }),
              ["NOTSET", "VALID"].contains(node.string("auto_pad", default: "NOTSET")),
              let weights = node.input(1).flatMap({ constants[$0]?.floatTensor }),
              weights.shape.count == 4, weights.shape[2] == 1, weights.shape[3] == 1,
              node.input(2).map({ constants[$0]?.floatTensor?.count == weights.shape[0] }) ?? true else { return nil }
        return weights
    }
}
