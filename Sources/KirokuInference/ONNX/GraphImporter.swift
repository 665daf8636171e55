import Foundation
import SwiftProtobuf

extension Model {
    /// Reads a serialized TensorProto (the .pb files of ONNX's test data) as a float tensor.
    static func tensor(serialized bytes: Data, name: String) throws(InferenceError) -> Tensor {
        let proto: Onnx_TensorProto
        do {
            proto = try Onnx_TensorProto(serializedBytes: bytes)
        } catch {
            throw InferenceError(.invalidTensorFile, "\(name) is not a TensorProto: \(error)")
        }
        switch try GraphImporter(model: name, opset: supportedOpsets.upperBound, directory: nil).constant(proto, what: "tensor \(name)") {
        case .float(let tensor): return tensor
        case .int64(let shape, let values): return Tensor(shape: shape, data: values.map { Float($0) })
        }
    }
}

/// Converts the protobuf graph into the engine's Graph, checking each part as it goes.
struct GraphImporter {
    let model: String
    let opset: Int
    /// Where external data files are looked up (the model file's directory), if anywhere.
    let directory: URL?

    func importGraph(_ proto: Onnx_GraphProto) throws(InferenceError) -> Graph {
        var constants: [String: Constant] = [:]
        // Element types of the constants: a QuantizeLinear's output range follows its zero point's.
        var elementTypes: [String: Int32] = [:]
        for initializer in proto.initializer {
            constants[initializer.name] = try constant(initializer, what: "initializer '\(initializer.name)'")
            elementTypes[initializer.name] = initializer.dataType
        }
        var nodes: [Node] = []
        // Every value name, so that names given to outputs the model leaves out are new.
        var taken = Set(proto.input.map(\.name) + proto.initializer.map(\.name) + proto.node.flatMap { $0.input + $0.output })
        for (index, nodeProto) in proto.node.enumerated() {
            let name = nodeProto.name.isEmpty ? "#\(index)" : nodeProto.name
            guard nodeProto.domain.isEmpty || nodeProto.domain == "ai.onnx" else {
                throw InferenceError(.unsupported, "operator \(nodeProto.domain).\(nodeProto.opType) (node '\(name)') in model \(model) is outside the ONNX standard domain")
            }
            guard OperatorSet.supported.contains(nodeProto.opType) else {
                throw InferenceError(.unsupported, "operator \(nodeProto.opType) (node '\(name)') in model \(model) is not supported; supported: \(OperatorSet.supported.sorted().joined(separator: ", "))")
            }
            var attributes: [String: Attribute] = [:]
            for attribute in nodeProto.attribute {
                attributes[attribute.name] = try self.attribute(attribute, node: "\(nodeProto.opType) node '\(name)'")
            }
            guard nodeProto.output.contains(where: { !$0.isEmpty }) else {
                throw InferenceError(.malformedModel, "\(nodeProto.opType) node '\(name)' in model \(model) has no output")
            }
            var node = Node(name: name, op: nodeProto.opType, inputs: nodeProto.input, outputs: nodeProto.output, attributes: attributes)
            // A first output left out (an LSTM's Y where only Y_h is read), and every output an LSTM
            // leaves out (the kernel writes all three), get new names that nothing reads.
            let written = node.op == "LSTM" ? 3 : 1
            node.outputs += Array(repeating: "", count: max(0, written - node.outputs.count))
            for position in 0..<written where node.outputs[position].isEmpty {
                node.outputs[position] = Graph.freshName("\(name)#output\(position)", taken: &taken)
            }
            if node.op == "Constant" {
                guard case .tensor(let value) = attributes["value"], let output = node.outputs.first else {
                    throw InferenceError(.unsupported, "\(node.label) in model \(model): only the 'value' form of Constant is supported")
                }
                constants[output] = value
                elementTypes[output] = nodeProto.attribute.first { $0.name == "value" }?.t.dataType
                continue
            }
            // The output's zero point: QuantizeLinear's third input, a QLinear operator's eighth.
            if let zeroPoint = ["QuantizeLinear": 2, "QLinearConv": 7, "QLinearMatMul": 7][node.op] {
                node.attributes[IRAttribute.quantizedRange] = .ints(try quantizedRange(node, zeroPointType: node.input(zeroPoint).map { elementTypes[$0] }))
            }
            nodes.append(node)
        }
        let inputs = try proto.input.filter { constants[$0.name] == nil }.map { value throws(InferenceError) -> GraphInput in
            let tensorType = value.type.tensorType
            guard tensorType.elemType == Int32(Onnx_TensorProto.DataType.float.rawValue) else {
                throw InferenceError(.unsupported, "input '\(value.name)' of model \(model) has element type \(Self.typeName(tensorType.elemType)); Kiroku runs float32 models")
            }
            let dimensions = tensorType.shape.dim.map { dimension -> Int? in
                if case .dimValue(let size) = dimension.value, size > 0 { return Int(size) }
                return nil
            }
            guard ShapeMath.count(dimensions.map { $0 ?? 1 }) != nil else {
                throw InferenceError(.malformedModel, "input '\(value.name)' of model \(model) has an impossible shape \(dimensions)")
            }
            return GraphInput(name: value.name, dimensions: dimensions)
        }
        guard !inputs.isEmpty else { throw InferenceError(.unsupported, "model \(model) has no runtime input; Kiroku runs models that take a tensor") }
        return Graph(name: proto.name, nodes: nodes, inputs: inputs, outputs: proto.output.map(\.name), constants: constants)
    }

    /// The integer range of a QuantizeLinear's output, from its zero point's element type:
    /// `zeroPointType` is nil without a zero point (uint8), .some(nil) for a zero point not a constant.
    private func quantizedRange(_ node: Node, zeroPointType: Int32??) throws(InferenceError) -> [Int] {
        guard let zeroPointType else { return [0, 255] }
        switch zeroPointType.flatMap({ Onnx_TensorProto.DataType(rawValue: Int($0)) }) {
        case .uint8?: return [0, 255]
        case .int8?: return [-128, 127]
        default:
            throw InferenceError(.unsupported, "\(node.label) in model \(model) quantizes to a type other than int8 or uint8 (its zero point must be an int8 or uint8 constant)")
        }
    }

    func attribute(_ proto: Onnx_AttributeProto, node: String) throws(InferenceError) -> Attribute {
        switch proto.type {
        case .int: return .int(Int(proto.i))
        case .ints: return .ints(proto.ints.map { Int($0) })
        case .float: return .float(proto.f)
        case .floats: return .floats(proto.floats)
        case .string: return .string(String(decoding: proto.s, as: UTF8.self))
        case .strings: return .strings(proto.strings.map { String(decoding: $0, as: UTF8.self) })
        case .tensor: return .tensor(try constant(proto.t, what: "attribute '\(proto.name)' of \(node)"))
        default: return .string("")  // graphs, sparse tensors, type protos: no supported operator reads them
        }
    }

    /// A TensorProto's values: float32 or int64 (int32, int8, uint8 and bool widened), from raw_data or typed fields.
    func constant(_ proto: Onnx_TensorProto, what: String) throws(InferenceError) -> Constant {
        if proto.dataLocation == .external { return try constant(try inlined(proto, what: what), what: what) }
        let shape = proto.dims.map { Int($0) }
        guard let count = ShapeMath.count(shape) else {
            throw InferenceError(.malformedModel, "\(what) in model \(model) has an impossible shape \(shape) (negative, or over \(ShapeMath.maximumElements) elements)")
        }
        switch Onnx_TensorProto.DataType(rawValue: Int(proto.dataType)) {
        case .float:
            let values = proto.rawData.isEmpty ? proto.floatData : try littleEndian(proto.rawData, count: count, as: UInt32.self, what: what).map { Float(bitPattern: $0) }
            guard values.count == count else { throw mismatch(what, values.count, shape) }
            return .float(Tensor(shape: shape, data: values))
        case .int64:
            let values = proto.rawData.isEmpty ? proto.int64Data : try littleEndian(proto.rawData, count: count, as: Int64.self, what: what)
            guard values.count == count else { throw mismatch(what, values.count, shape) }
            return .int64(shape: shape, values: values)
        case .int32: return try widened(proto, shape: shape, count: count, what: what, as: Int32.self)
        case .int8: return try widened(proto, shape: shape, count: count, what: what, as: Int8.self)
        case .uint8: return try widened(proto, shape: shape, count: count, what: what, as: UInt8.self)
        case .bool: return try widened(proto, shape: shape, count: count, what: what, as: UInt8.self) { $0 != 0 ? 1 : 0 }
        default:
            throw InferenceError(.unsupported, "\(what) in model \(model) has element type \(Self.typeName(proto.dataType)); Kiroku reads float32 weights, int8, uint8 and int32 quantized ones, and int64, int32 and bool shape tensors")
        }
    }

    /// The tensor with its external data read in as raw data: from a file beside the model (a
    /// relative path that stays inside the model's directory), at the given offset and length.
    func inlined(_ proto: Onnx_TensorProto, what: String) throws(InferenceError) -> Onnx_TensorProto {
        let entries = Dictionary(proto.externalData.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        let location = entries["location"] ?? ""
        guard let directory else {
            throw InferenceError(.unsupported, "\(what) in model \(model) keeps its data in an external file '\(location)', and the model was not read from a file; load it from its file, or re-save it with its weights inside (onnx.save(..., save_as_external_data=False))")
        }
        let base = directory.standardizedFileURL.path, file = directory.appendingPathComponent(location).standardizedFileURL
        guard !location.isEmpty, !location.hasPrefix("/"), !location.split(separator: "/").contains(".."),
              file.path.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            throw InferenceError(.malformedModel, "\(what) in model \(model) names external data '\(location)' outside the model's directory")
        }
        let offset = Int(entries["offset"] ?? "0"), length = entries["length"].map { Int($0) ?? -1 }
        guard let offset, offset >= 0, length ?? 0 >= 0 else {
            throw InferenceError(.malformedModel, "\(what) in model \(model) has an invalid external data offset or length")
        }
        let bytes: Data
        do {
            let handle = try FileHandle(forReadingFrom: file)
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(offset))
            bytes = try (length.map { try handle.read(upToCount: $0) } ?? handle.readToEnd()) ?? Data()
        } catch {
            throw InferenceError(.malformedModel, "\(what) in model \(model): cannot read its external file '\(location)': \(error.localizedDescription)")
        }
        guard length == nil || bytes.count == length else {
            throw InferenceError(.malformedModel, "\(what) in model \(model): external file '\(location)' ends before offset \(offset) + length \(length ?? 0)")
        }
        var copy = proto
        copy.dataLocation = .default
        copy.externalData = []
        copy.rawData = bytes
        return copy
    }

    /// An integer tensor of element type `T` (stored as raw data of T, or in int32_data) widened to int64.
    private func widened<T: FixedWidthInteger>(_ proto: Onnx_TensorProto, shape: [Int], count: Int, what: String, as: T.Type,
                                               _ value: (Int64) -> Int64 = { $0 }) throws(InferenceError) -> Constant {
        let values = proto.rawData.isEmpty ? proto.int32Data.map { value(Int64(T(truncatingIfNeeded: $0))) }
            : try littleEndian(proto.rawData, count: count, as: T.self, what: what).map { value(Int64($0)) }
        guard values.count == count else { throw mismatch(what, values.count, shape) }
        return .int64(shape: shape, values: values)
    }

    private func littleEndian<T: FixedWidthInteger>(_ data: Data, count: Int, as: T.Type, what: String) throws(InferenceError) -> [T] {
        guard data.count == count * MemoryLayout<T>.size else {
            throw InferenceError(.malformedModel, "\(what) in model \(model) holds \(data.count) bytes of raw data; its shape needs \(count * MemoryLayout<T>.size)")
        }
        return data.withUnsafeBytes { raw in (0..<count).map { T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * MemoryLayout<T>.size, as: T.self)) } }
    }

    private func mismatch(_ what: String, _ found: Int, _ shape: [Int]) -> InferenceError {
        InferenceError(.malformedModel, "\(what) in model \(model) holds \(found) values; its shape \(shape) needs \(shape.reduce(1, *))")
    }

    static func typeName(_ code: Int32) -> String {
        Onnx_TensorProto.DataType(rawValue: Int(code)).map { "\($0)".uppercased() } ?? "code \(code)"
    }
}
