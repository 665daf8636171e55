import Foundation
import SwiftProtobuf

/// A loaded ONNX model, validated against what the engine supports. Create an
/// `InferenceSession` from it to run it.
public struct Model {
    /// The model's name (its file name, or the name given at load).
    public let name: String
    /// The default-domain opset the model was exported with.
    public let opset: Int
    var graph: Graph

    /// The arithmetic a model asks for.
    public enum Precision: String, Sendable {
        /// Float weights and activations.
        case float32 = "fp32"
        /// 8-bit weights and activations in QDQ form (QuantizeLinear and DequantizeLinear nodes), or
        /// ONNX's QLinearConv and QLinearMatMul between them.
        case int8QDQ = "int8-qdq"
    }

    /// int8QDQ when the graph quantizes anything, float32 otherwise.
    public var precision: Precision {
        graph.nodes.contains { ["QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul"].contains($0.op) } ? .int8QDQ : .float32
    }

    /// The opsets the engine implements.
    public static let supportedOpsets = 11...28

    /// Loads an ONNX file.
    public init(contentsOf url: URL) throws(InferenceError) {
        try self.init(serialized: try Self.contents(of: url), name: url.lastPathComponent, directory: url.deletingLastPathComponent())
    }

    /// A model file's bytes.
    static func contents(of url: URL) throws(InferenceError) -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw InferenceError(.malformedModel, "cannot read model \(url.path): \(error.localizedDescription)")
        }
    }

    /// Parses and validates a serialized ONNX ModelProto; weights kept in external files (as
    /// PyTorch's exporter writes them) are read from `directory`, and refused without one.
    public init(serialized bytes: Data, name: String, directory: URL? = nil) throws(InferenceError) {
        guard !bytes.isEmpty else { throw InferenceError(.malformedModel, "model \(name) is empty") }
        let proto: Onnx_ModelProto
        do {
            proto = try Onnx_ModelProto(serializedBytes: bytes)
        } catch {
            throw InferenceError(.malformedModel, "model \(name) is not a valid ONNX file (truncated or corrupt): \(error)")
        }
        guard proto.hasGraph, !proto.graph.node.isEmpty else {
            throw InferenceError(.malformedModel, "model \(name) has no graph (is it an ONNX model?)")
        }
        let defaultOpsets = proto.opsetImport.filter { $0.domain.isEmpty || $0.domain == "ai.onnx" }
        guard let opset = defaultOpsets.map({ Int($0.version) }).max() else {
            let domains = proto.opsetImport.map(\.domain).joined(separator: ", ")
            throw InferenceError(.unsupported, "model \(name) uses only operator domains [\(domains)]; Kiroku runs the standard ai.onnx operators")
        }
        guard Self.supportedOpsets.contains(opset) else {
            throw InferenceError(.unsupported, "model \(name) uses opset \(opset); Kiroku runs opsets \(Self.supportedOpsets.lowerBound) to \(Self.supportedOpsets.upperBound): re-export it with a supported opset")
        }
        self.name = name
        self.opset = opset
        self.graph = try GraphImporter(model: name, opset: opset, directory: directory).importGraph(proto.graph)
    }
}

extension Model {
    /// The model's runtime input names, in order.
    public var inputNames: [String] { graph.inputs.map(\.name) }

    /// A copy in which the named inputs are constants with the given values (for weights that a
    /// model takes as inputs, as ONNX's backend tests do).
    func binding(_ values: [String: Tensor]) -> Model {
        var copy = self
        for (name, tensor) in values {
            copy.graph.constants[name] = .float(tensor)
            copy.graph.inputs.removeAll { $0.name == name }
        }
        return copy
    }
}
