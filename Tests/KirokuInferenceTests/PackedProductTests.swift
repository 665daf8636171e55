import Testing

@testable import KirokuInference

@Suite("Products by a constant B run on panels packed at load in the AVX2 build")
struct PackedProductTests {
    /// Each product step's operators and chosen implementation in the fixture's session.
    static func products(_ name: String, kernels: KernelSet) throws -> [String] {
        try InferenceSession(model: ReferenceCase.model(named: name), threads: 1, kernels: kernels).steps
            .filter { ["Gemm", "MatMul"].contains($0.op) }.map { "\($0.op) \($0.variant ?? "sgemm")" }
    }

    @Test("the packed fixtures (and squeeze-excitation's 1x1 convolutions of a 1x1 plane, on planes or in a chain on channel blocks) take the panels, so their comparison with ONNX Runtime checks them; a whole C matrix and the portable build keep sgemm",
          .enabled(if: KernelSet.supported().contains(.avx2), "this CPU lacks AVX2 or FMA"))
    func chosen() throws {
        for name in ["gemm_packed_alpha_beta_transb", "gemm_packed_one_row_c", "matmul_packed_deep_gelu", "matmul_tokens_bands",
                     "linear_gelu_dynamo_chain"] {
            let products = try Self.products(name, kernels: .avx2)
            #expect(products.count == 1 && products.allSatisfy { $0.hasSuffix("packed panels") }, "\(name): \(products)")
            #expect(try Self.products(name, kernels: .portable).allSatisfy { $0.hasSuffix("sgemm") }, "\(name)")
        }
        // Squeeze-excitation's 1x1 convolutions of a 1x1 plane, batch 2, are products of rows too, and
        // so they are inside a chain of convolutions on channel blocks, whose others stay on blocks.
        for name in ["squeeze_excitation_rows_batch2", "squeeze_excitation_in_blocks_batch2"] {
            let steps = try InferenceSession(model: ReferenceCase.model(named: name), threads: 1, kernels: .avx2).steps
            #expect(steps.filter { $0.variant == "packed panels" }.map(\.op) == ["Conv", "Conv"], "\(name): \(steps)")
        }
        let chain = try InferenceSession(model: ReferenceCase.model(named: "squeeze_excitation_in_blocks_batch2"), threads: 1, kernels: .avx2)
            .steps.filter { $0.op == "Conv" && $0.variant?.hasPrefix("blocked") == true }
        #expect(chain.count == 3, "\(chain)")
        #expect(try Self.products("gemm_whole_c_matrix", kernels: .avx2) == ["Gemm sgemm"])
        #expect(try Self.products("matmul_heads_broadcast", kernels: .avx2) == ["MatMul sgemm"])
    }
}
