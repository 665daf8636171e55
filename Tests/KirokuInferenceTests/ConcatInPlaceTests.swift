import Testing

@testable import KirokuInference

@Suite("Concat inputs computed straight into the Concat's output")
struct ConcatInPlaceTests {
    @Test("computed inputs and a nested Concat cost no copy; a graph input and a repeated value are copied")
    func inPlace() throws {
        let steps = try ReferenceCase.steps(named: "concat_in_place")
        // The inner Concat is no step at all; the outer one copies x and the second q only (p, inner, u in place).
        let concats = steps.filter { $0.op == "Concat" }
        #expect(concats.map(\.nodes) == [["Concat node '#7'"]] && concats.first?.inPlace?.parts == 3 && concats.first?.inPlace?.of == 5,
                "\(steps)")
        #expect(steps.count == 8, "\(steps)")
    }

    @Test("a Slice of whole channels of one image is part of its input, no step (one a graph output, one read by a Relu, one by an Add); a Slice that also cuts rows copies")
    func slicesAsViews() throws {
        let steps = try ReferenceCase.steps(named: "slice_channels_as_views")
        #expect(steps.filter { $0.op == "Slice" }.count == 1 && steps.count == 4, "\(steps)")
    }

    @Test("a batch that runs whole copies every input (a slice of several images is not contiguous)")
    func copiedForABatch() throws {
        let steps = try ReferenceCase.steps(named: "pointwise_siblings_batch_softmax")
        #expect(steps.contains { $0.nodes == ["Concat node '#4'"] && $0.inPlace == nil }, "\(steps)")
    }
}
