import Testing

@testable import KirokuInference

@Suite("A same-size AveragePool runs after the narrowing pointwise convolution that reads it")
struct PoolAfterPointwiseTests {
    @Test("both pools move after their convolutions, which then merge; the pools add the bias and activation")
    func swapped() throws {
        let steps = try ReferenceCase.steps(named: "avgpool_then_pointwise_swapped")
        #expect(steps.count == 3 && steps[0].op == "Conv" && steps[0].isMerged, "\(steps)")
        #expect(steps.dropFirst().allSatisfy { $0.op == "AveragePool" && $0.variant == "then the convolution's bias and activation" },
                "\(steps)")
    }

    @Test("a widening convolution, a stride-2 pool and a pool read twice keep their order")
    func kept() throws {
        let steps = try ReferenceCase.steps(named: "avgpool_then_pointwise_kept")
        #expect(steps.map(\.op) == ["AveragePool", "Conv", "AveragePool", "Conv", "AveragePool", "Conv"], "\(steps)")
    }
}
