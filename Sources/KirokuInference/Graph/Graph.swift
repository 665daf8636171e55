/// An attribute value of a node.
enum Attribute: Equatable {
    case int(Int)
    case ints([Int])
    case float(Float)
    case floats([Float])
    case string(String)
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

    /// The activation a load-time pass fused into this node's epilogue, if any.
    var fusedActivation: Activation? {
        if case .activation(let activation) = attributes[GraphPasses.fusedActivation] { activation } else { nil }
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
