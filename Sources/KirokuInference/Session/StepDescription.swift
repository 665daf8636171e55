/// What one compiled step does, as data: the node (or nodes, when one was fused into another) it
/// runs, the kernel's chosen implementation, the layout it writes, and for a Concat how many of
/// its parts were computed in place. Tests check the compiler's choices through it; `label` is
/// the same facts as one line for profiles.
public struct StepDescription: Sendable, Equatable, CustomStringConvertible {
    /// What produced the step.
    public enum Kind: String, Sendable {
        /// One node of the graph (with any fused into it).
        case node
        /// One output of a node that has several (Split).
        case nodeOutput
        /// A move of a value into channel blocks (NCHW8c) or back to NCHW.
        case toChannelBlocks, fromChannelBlocks
        /// A model output known at load, copied out.
        case constantOutput
    }

    /// The memory layout of what the step writes.
    public enum Layout: String, Sendable {
        /// Channels as planes.
        case nchw
        /// Blocks of 8 channels, a vector per position.
        case channelBlocks
    }

    /// What produced the step.
    public var kind: Kind
    /// The operators it runs, first the node's own, then any fused into it (e.g. ["Conv", "Add"]).
    public var operators: [String]
    /// The nodes' labels ("Conv node 'x'"), then the output's name for one output of several; the
    /// value moved ("value 12") for a layout move; the output's name for a constant output.
    public var nodes: [String]
    /// The kernel's chosen implementation ("depthwise 3x3/1", "blocked pointwise", ...), if it has several.
    public var variant: String?
    /// The layout it writes.
    public var layout: Layout
    /// For a Concat computed partly in place: how many parts its inputs' steps wrote straight into it, of how many.
    public var inPlace: (parts: Int, of: Int)?
    /// The name of the node the step runs (the first, when others were fused into it): how a
    /// session sets an integer layer's time beside its float twin's.
    var layer: String?

    /// Creates a description.
    public init(kind: Kind, operators: [String], nodes: [String], variant: String? = nil, layout: Layout,
                inPlace: (parts: Int, of: Int)? = nil) {
        (self.kind, self.operators, self.nodes, self.variant, self.layout, self.inPlace) = (kind, operators, nodes, variant, layout, inPlace)
    }

    /// The facts as one line: "Conv node 'a' + Add node 'b' (blocked pointwise + residual)".
    public var label: String {
        switch kind {
        case .toChannelBlocks: return "to channel blocks"
        case .fromChannelBlocks: return "from channel blocks"
        case .constantOutput: return "output \(nodes.first ?? "")"
        case .nodeOutput: return nodes.joined(separator: " → ")
        case .node: return nodes.joined(separator: " + ") + (variant.map { " (\($0))" } ?? "")
        }
    }

    /// The label.
    public var description: String { label }

    /// Equal when every fact is.
    public static func == (a: StepDescription, b: StepDescription) -> Bool {
        a.kind == b.kind && a.operators == b.operators && a.nodes == b.nodes && a.variant == b.variant && a.layout == b.layout
            && a.inPlace?.parts == b.inPlace?.parts && a.inPlace?.of == b.inPlace?.of
    }
}
