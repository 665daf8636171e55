import Testing

@testable import KirokuInference

@Suite("Pointwise convolutions that read one input with the same activation run as one")
struct SiblingMergeTests {
    @Test("the Relu siblings merge, a Clip sibling and a 3x3 convolution stay apart, and one image's slices cost no step")
    func merged() throws {
        let steps = try ReferenceCase.steps(named: "pointwise_siblings_merged")
        let convolutions = steps.filter { $0.op == "Conv" }
        #expect(convolutions.count == 4, "\(steps)")
        #expect(convolutions.filter(\.isMerged).count == 1, "\(steps)")
        // The 4 convolutions and the Concat, which copies only the merged slice (the rest are
        // computed in place): the slices cost nothing.
        #expect(steps.count == 5 && steps.last?.op == "Concat" && steps.last?.nodes == ["Concat node '#8'"]
                && steps.last?.inPlace?.parts == 3 && steps.last?.inPlace?.of == 4, "\(steps)")
    }

    @Test("a batch that runs whole keeps them apart (a slice of several images is not contiguous)")
    func apartForABatch() throws {
        let steps = try ReferenceCase.steps(named: "pointwise_siblings_batch_softmax")
        #expect(steps.filter { $0.op == "Conv" }.count == 2 && !steps.contains(where: \.isMerged), "\(steps)")
    }
}
