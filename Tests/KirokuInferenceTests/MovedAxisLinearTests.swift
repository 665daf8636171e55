import Testing

@testable import KirokuInference

@Suite("Linear layers over an axis moved last and back run as convolutions over it (CaiT's talking heads, MLP-Mixer's token MLP)")
struct MovedAxisLinearTests {
    @Test("no Transpose is left (a chain whose Add comes first too: the Transpose moves past it); each MatMul with its bias is one Conv")
    func noTransposes() throws {
        let steps = try ReferenceCase.steps(named: "linears_over_moved_axis")
        #expect(!steps.contains { ["Transpose", "MatMul"].contains($0.op) } && steps.filter { $0.op == "Conv" }.count == 5, "\(steps)")
    }
}
