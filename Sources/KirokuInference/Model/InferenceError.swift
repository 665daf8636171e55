/// Why a model could not be loaded or run. The message names the model, node and operator.
public struct InferenceError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The broad kind of failure.
    public enum Kind: String, Sendable {
        /// The file is not a readable ONNX model (truncated, corrupt, empty).
        case malformedModel = "malformed model"
        /// A valid model that uses something Kiroku does not run (an operator, a type, an opset).
        case unsupported
        /// Shapes that do not fit together, in the model or between the model and an input.
        case invalidShape = "invalid shape"
        /// A .npy file Kiroku cannot read.
        case invalidTensorFile = "invalid tensor file"
        /// A node name or operator type asked for that the model does not have.
        case unknownNode = "unknown node"
    }

    /// The kind of failure.
    public let kind: Kind
    /// What happened, naming the model, node and operator where they apply.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}
