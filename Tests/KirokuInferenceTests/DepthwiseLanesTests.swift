import Testing

@testable import KirokuInference

@Suite("Depthwise convolutions over small planes run 8 channels to a vector in the AVX2 build")
struct DepthwiseLanesTests {
    /// Each Conv step's chosen implementation in the fixture's session with the AVX2 kernels.
    static func convolutions(_ name: String) throws -> [String] {
        try InferenceSession(model: ReferenceCase.model(named: name), threads: 1, kernels: .avx2).steps.filter { $0.op == "Conv" }.map { $0.variant ?? "" }
    }

    @Test("the lanes fixtures take the lanes kernel, so their comparison with ONNX Runtime checks it",
          .enabled(if: KernelSet.supported().contains(.avx2), "this CPU lacks AVX2 or FMA"))
    func chosen() throws {
        for name in ["depthwise_lanes_stride2_clip", "depthwise_lanes_hardswish_batch2", "depthwise_lanes_dilated_asym",
                     "conv_depthwise_stride2", "conv_depthwise_wide_kernel"] {
            let labels = try Self.convolutions(name)
            #expect(labels.count == 1 && labels.allSatisfy { $0.hasPrefix("depthwise by lanes ") }, "\(name): \(labels)")
        }
        // A 3x3 plane (9 positions) is taken; a 1x1 output (fewer than 8 positions) is not.
        let smallest = try Self.convolutions("depthwise_lanes_smallest_planes")
        #expect(smallest == ["depthwise by lanes 3x3/1", "depthwise 2x2/2"],
                "\(smallest)")
    }
}
