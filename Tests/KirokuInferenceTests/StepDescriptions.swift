@testable import KirokuInference

extension StepDescription {
    /// The step's own operator ("Conv" for a Conv with an Add fused in), or its kind for a move or an output.
    var op: String { operators.first ?? kind.rawValue }
    /// True when the step runs more than one node: merged siblings, or a node fused into another.
    var isMerged: Bool { operators.count > 1 || nodes.contains { $0.contains(" + ") } }
}
