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

    @Test("a merged kernel is never larger than the larger branch's: pads that would grow it (a hostile model's) leave the branches apart")
    func bounded() {
        func branch(_ kernel: Int, pads: [Int]) -> ConvolutionBranch {
            ConvolutionBranch(x: "x", node: 0, weights: Tensor(shape: [4, 4, kernel, kernel], data: [Float](repeating: 1, count: 16 * kernel * kernel)),
                              bias: [Float](repeating: 0, count: 4), group: 1, strides: [1, 1], pads: pads)
        }
        let repvgg = ConvolutionBranch.merged(branch(3, pads: [1, 1, 1, 1]), branch(1, pads: [0, 0, 0, 0]), subtracting: false)
        #expect(repvgg?.weights.shape == [4, 4, 3, 3] && repvgg?.pads == [1, 1, 1, 1])
        #expect(repvgg?.weights.data[4 * 4 * 9 - 5] == 2 && repvgg?.weights.data[0] == 1)
        // Aligned, but a 1,001 x 1,001 kernel of two 1x1 ones.
        #expect(ConvolutionBranch.merged(branch(1, pads: [0, 0, 1000, 1000]), branch(1, pads: [1000, 1000, 0, 0]), subtracting: false)?.weights.shape == nil)
    }
}
