import Testing

@testable import KirokuInference

@Suite("Parallel convolution branches summed run as one convolution (RepVGG, MobileOne, FastViT, ACNet)")
struct BranchMergingTests {
    @Test("each summed block is one convolution step; the dilated pair stays two")
    func merged() throws {
        let steps = try ReferenceCase.steps(named: "parallel_branches").filter { $0.kind == .node }
        #expect(steps.map(\.op) == ["Conv", "Conv", "Conv", "Conv", "Conv", "Conv", "Conv"], "\(steps)")
        #expect(!steps.contains { step in step.operators.contains { ["BatchNormalization", "Sub", "Mul"].contains($0) } }, "\(steps)")
    }
}
