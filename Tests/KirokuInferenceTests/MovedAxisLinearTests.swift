import Testing

@testable import KirokuInference

@Suite("Linear layers over an axis moved last and back run as convolutions over it (CaiT's talking heads, MLP-Mixer's token MLP)")
struct MovedAxisLinearTests {
    @Test("no Transpose is left but the two around a chain whose middle value is also a graph output (a chain whose Add comes first is taken too: its Transpose moves past the Add); each MatMul with its bias is one Conv")
    func noTransposes() throws {
        let steps = try ReferenceCase.steps(named: "linears_over_moved_axis")
        #expect(steps.filter { $0.op == "Transpose" }.count == 2 && steps.filter { $0.op == "MatMul" }.count == 2
                    && steps.filter { $0.op == "Conv" }.count == 5, "\(steps)")
    }
}
