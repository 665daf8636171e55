import Testing

@testable import KirokuInference

@Suite("Concat inputs computed straight into the Concat's output")
struct ConcatInPlaceTests {
    @Test("computed inputs and a nested Concat cost no copy; a graph input and a repeated value are copied")
    func inPlace() throws {
        let steps = try ReferenceCase.steps(named: "concat_in_place")
        // The inner Concat is no step at all; the outer one copies x and the second q only (p, inner, u in place).
        #expect(steps.filter { $0.hasPrefix("Concat") } == ["Concat node '#7' (3 of 5 in place)"], "\(steps)")
        #expect(steps.count == 8, "\(steps)")
    }

    @Test("a batch that runs whole copies every input (a slice of several images is not contiguous)")
    func copiedForABatch() throws {
        let steps = try ReferenceCase.steps(named: "pointwise_siblings_batch_softmax")
        #expect(steps.contains("Concat node '#4'"), "\(steps)")
    }
}
