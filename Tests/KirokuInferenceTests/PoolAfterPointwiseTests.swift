import Testing

@testable import KirokuInference

@Suite("A same-size AveragePool runs after the narrowing pointwise convolution that reads it")
struct PoolAfterPointwiseTests {
    @Test("both pools move after their convolutions, which then merge; the pools add the bias and activation")
    func swapped() throws {
        let steps = try ReferenceCase.steps(named: "avgpool_then_pointwise_swapped")
        #expect(steps.count == 3 && steps[0].hasPrefix("Conv") && steps[0].contains(" + "), "\(steps)")
        #expect(steps.dropFirst().allSatisfy { $0.hasPrefix("AveragePool") && $0.hasSuffix("(then the convolution's bias and activation)") },
                "\(steps)")
    }

    @Test("a widening convolution, a stride-2 pool and a pool read twice keep their order")
    func kept() throws {
        let steps = try ReferenceCase.steps(named: "avgpool_then_pointwise_kept")
        #expect(steps.map { $0.prefix(4) } == ["Aver", "Conv", "Aver", "Conv", "Aver", "Conv"], "\(steps)")
    }
}
