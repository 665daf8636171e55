/// Why an image could not be turned into a model input; the worker maps every kind to a
/// permanent job failure with `message` as the reason.
public struct ImageError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The broad kind of failure.
    public enum Kind: String, Sendable {
        /// The data ends before the image does.
        case truncated
        /// The data is damaged, or is not an image at all.
        case corrupt
        /// A real image in a format or variant Kiroku does not decode.
        case unsupported
        /// Larger than the configured limits (pixels or bytes), caught from the header.
        case tooLarge = "too large"
    }

    /// The kind of failure.
    public let kind: Kind
    /// What was wrong, in words an operator can act on.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue) image: \(message)" }
}
