import Testing

@testable import KirokuInference

@Suite("Pointwise convolutions that read one input with the same activation run as one")
struct SiblingMergeTests {
    /// The fixture's session's step labels.
    static func steps(_ name: String) throws -> [String] {
        try InferenceSession(model: ReferenceCase.model(named: name), threads: 1).stepLabels
    }

    @Test("the Relu siblings merge, a Clip sibling and a 3x3 convolution stay apart, and one image's slices cost no step")
    func merged() throws {
        let steps = try Self.steps("pointwise_siblings_merged")
        let convolutions = steps.filter { $0.hasPrefix("Conv") }
        #expect(convolutions.count == 4, "\(steps)")
        #expect(convolutions.filter { $0.contains(" + ") }.count == 1, "\(steps)")
        #expect(steps.count == 5, "\(steps)")  // the 4 convolutions and the Concat: the slices cost nothing
    }

    @Test("a batch that runs whole keeps them apart (a slice of several images is not contiguous)")
    func apartForABatch() throws {
        let steps = try Self.steps("pointwise_siblings_batch_softmax")
        #expect(steps.filter { $0.hasPrefix("Conv") }.count == 2 && !steps.contains { $0.contains(" + ") }, "\(steps)")
    }
}
