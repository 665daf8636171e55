import Testing

@testable import KirokuInference

@Suite("A batch runs image by image where the model keeps its images apart")
struct ImageByImageTests {
    static func session(_ name: String, threads: Int = 1) throws -> InferenceSession {
        try InferenceSession(model: ReferenceCase.model(named: name), threads: threads)
    }

    static func images(_ name: String) throws -> Int {
        try session(name).images
    }

    @Test("convolutions over a batch of 2 run one image at a time")
    func separate() throws {
        #expect(try Self.images("direct_pointwise_widening_batch2") == 2)
        #expect(try Self.images("direct_valid_3x3_hardswish_batch2") == 2)
    }

    @Test("a Softmax over the batch axis, or a mean over it added back, keeps the batch whole")
    func combined() throws {
        #expect(try Self.images("softmax_over_batch") == 1)
        #expect(try Self.images("reducemean_over_batch_added") == 1)
    }

    @Test("images that share out evenly over the threads run side by side, one per thread; others one after another")
    func sideBySide() throws {
        #expect(try Self.session("direct_pointwise_widening_batch2", threads: 2).imagesAtOnce == 2)
        #expect(try Self.session("direct_pointwise_widening_batch2", threads: 3).imagesAtOnce == 1)
        #expect(try Self.session("direct_pointwise_widening_batch2", threads: 1).imagesAtOnce == 1)
        #expect(try Self.session("softmax_over_batch", threads: 3).imagesAtOnce == 1)  // batch 3, but kept whole
    }

    @Test("one image's shapes are the batch's without its first axis, or not, value by value")
    func shapes() {
        #expect(InferenceSession.keepsImagesApart(whole: ["x": [4, 3, 8, 8], "y": [4, 10]], single: ["x": [1, 3, 8, 8], "y": [1, 10]], batch: 4))
        #expect(!InferenceSession.keepsImagesApart(whole: ["x": [4, 3], "t": [3, 4]], single: ["x": [1, 3], "t": [3, 1]], batch: 4))  // a transpose
        #expect(!InferenceSession.keepsImagesApart(whole: ["x": [4, 3], "m": [1, 3]], single: ["x": [1, 3], "m": [1, 3]], batch: 4))  // a mean over the batch
        #expect(!InferenceSession.keepsImagesApart(whole: ["x": [4, 3], "y": [4, 3]], single: ["x": [1, 3]], batch: 4))
        // Values only one image's compilation has (merged siblings) do not count.
        #expect(InferenceSession.keepsImagesApart(whole: ["x": [4, 3]], single: ["x": [1, 3], "a + b#output": [1, 6]], batch: 4))
    }

    @Test("a batch of a model whose siblings merge for one image runs image by image, with the merge")
    func siblingsMerged() throws {
        let session = try Self.session("pointwise_siblings_batch2")
        #expect(session.images == 2)
        #expect(session.steps.contains { $0.op == "Conv" && $0.isMerged }, "\(session.steps)")
    }
}
