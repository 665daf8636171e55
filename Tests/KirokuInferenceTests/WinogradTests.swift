import Testing

@testable import KirokuInference

@Suite("3x3 stride-1 convolutions between channel blocks run by Winograd's F(4x4, 3x3) in the AVX2 build",
       .enabled(if: KernelSet.supported().contains(.avx2), "this CPU lacks AVX2 or FMA"))
struct WinogradTests {
    /// Each convolution step's operators and variant, with the AVX2 kernels on `threads` threads
    /// (an activation right after a convolution is fused into its node before compiling).
    static func convolutions(_ model: Model, threads: Int = 1) throws -> [String] {
        try InferenceSession(model: model, threads: threads, kernels: .avx2).steps.filter { $0.op == "Conv" }
            .map { "\($0.operators.joined(separator: "+")) \($0.variant ?? "")" }
    }

    @Test("the Winograd fixtures take it (residual, Relu and SiLU in its epilogue; bands, a shorter last band and passes; outputs narrower than a tile, pads of 2), so their comparison with ONNX Runtime checks it; 16 input channels, a stride of 2 and the portable build keep the direct kernels")
    func chosen() throws {
        let tiles = try Self.convolutions(ReferenceCase.model(named: "winograd_tiles_residual_silu_batch2"))
        #expect(tiles == [
            "Conv blocked winograd 3x3/1", "Conv+Add+Relu blocked winograd 3x3/1 + residual", "Conv blocked winograd 3x3/1",
            "Conv blocked 3x3/1",
        ], "\(tiles)")
        let large = try #require(ReferenceCase.large.first { $0.name == "winograd_bands_passes" }, "run make test's fixture step")
        let bands = try Self.convolutions(large.model())
        #expect(bands == ["Conv blocked winograd 3x3/1", "Conv blocked 3x3/2", "Conv blocked winograd 3x3/1"], "\(bands)")
        // Edges: an output narrower than a tile, and pads of 2 (the output larger than the input).
        let edges = try Self.convolutions(ReferenceCase.model(named: "winograd_narrow_and_wide_pads"))
        #expect(edges == ["Conv blocked pointwise 1x1/1", "Conv blocked winograd 3x3/1", "Conv blocked pointwise 1x1/1",
                          "Conv blocked winograd 3x3/1"], "\(edges)")
        let portable = try InferenceSession(model: ReferenceCase.model(named: "winograd_tiles_residual_silu_batch2"), threads: 1,
                                            kernels: .portable).steps
        #expect(!portable.contains { $0.variant?.contains("winograd") == true }, "\(portable)")
    }

    @Test("the probe at load keeps Winograd where it leaves the outputs as they are, and the direct kernels for a model whose output is all rounding (a 3x3 convolution less the same as a 5x5); always and never are obeyed")
    func probed() throws {
        let winograd = { (name: String, choice: WinogradChoice) throws -> Int in
            try InferenceSession(model: ReferenceCase.model(named: name), threads: 1, kernels: .avx2, winograd: choice).steps
                .filter { $0.variant?.hasPrefix(WinogradPlan.label) == true }.count
        }
        #expect(try winograd("winograd_probe_rounding_only", .always) == 1)
        #expect(try winograd("winograd_probe_rounding_only", .probed) == 0)
        #expect(try winograd("winograd_tiles_residual_silu_batch2", .probed) == 3)
        #expect(try winograd("winograd_tiles_residual_silu_batch2", .never) == 0)
    }

    @Test("the weights' transform G g Gᵀ: a lone 1 at tap (r, c) gives the outer product of G's columns r and c")
    func weightTransform() {
        let g: [[Float]] = [[1.0 / 4, 0, 0], [-1.0 / 6, -1.0 / 6, -1.0 / 6], [-1.0 / 6, 1.0 / 6, -1.0 / 6],
                            [1.0 / 24, 1.0 / 12, 1.0 / 6], [1.0 / 24, -1.0 / 12, 1.0 / 6], [0, 0, 1]]
        for tap in 0..<9 {
            var weights = Tensor(zeros: [1, 1, 3, 3])
            weights.data[tap] = 1
            let transformed = WinogradPlan.transformWeights(weights, inChannels: 1, outChannels: 1)
            for point in 0..<36 {
                let wanted = g[point / 6][tap / 3] * g[point % 6][tap % 3]
                #expect(abs(transformed[point] - wanted) < 1e-7, "tap \(tap), point \(point): \(transformed[point]), wanted \(wanted)")
            }
        }
    }
}
