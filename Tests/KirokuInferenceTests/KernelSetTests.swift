import Foundation
import KirokuTestSupport
import Testing

@testable import KirokuInference

@Suite("Kernel builds: the AVX2 loops only where the CPU has AVX2 and FMA, VNNI's only with AVX-512 VNNI", .subprocesses)
struct KernelSetTests {
    static let zen3 = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 bmi2\n"
    static let sandyBridge = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx\n"
    static let skylakeServer = "processor\t: 0\nflags\t\t: fpu sse sse2 fma avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl\n"
    static let zen4 = "processor\t: 0\nflags\t\t: fpu sse sse2 fma avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16\n"

    @Test("the AVX2 build is offered only with both avx2 and fma among the CPU's flags, the VNNI one with avx512_vnni and what it needs besides")
    func detection() {
        #expect(KernelSet.supported(cpuinfo: Self.zen3) == [.portable, .avx2])
        #expect(KernelSet.supported(cpuinfo: Self.skylakeServer) == [.portable, .avx2])
        #expect(KernelSet.supported(cpuinfo: Self.zen4) == [.portable, .avx2, .vnni])
        #expect(KernelSet.supported(cpuinfo: "flags\t: fma avx2 avx512_vnni\n") == [.portable, .avx2])
        #expect(KernelSet.supported(cpuinfo: Self.sandyBridge) == [.portable])
        #expect(KernelSet.supported(cpuinfo: "flags\t: avx2\n") == [.portable])
        #expect(KernelSet.supported(cpuinfo: nil) == [.portable])
    }

    @Test("KIROKU_KERNELS picks a build the CPU runs; anything else falls back to the best")
    func choice() {
        #expect(KernelSet.choose(requested: nil, supported: [.portable, .avx2]) == .avx2)
        #expect(KernelSet.choose(requested: "portable", supported: [.portable, .avx2]) == .portable)
        #expect(KernelSet.choose(requested: "avx2", supported: [.portable]) == .portable)
        #expect(KernelSet.choose(requested: "sse9", supported: [.portable, .avx2]) == .avx2)
    }

    @Test("a KIROKU_KERNELS the CPU cannot run, or that names no build, is refused with what to set")
    func problems() async throws {
        #expect(KernelSet.problem(requested: nil, supported: [.portable]) == nil)
        #expect(KernelSet.problem(requested: "portable", supported: [.portable, .avx2]) == nil)
        #expect(KernelSet.problem(requested: "avx2", supported: [.portable])?.contains("needs avx2, fma, which this CPU lacks in part: use portable,") == true)
        #expect(KernelSet.problem(requested: "vnni", supported: [.portable, .avx2])?.contains("avx512_vnni, which this CPU lacks in part: use portable or avx2,") == true)
        #expect(KernelSet.problem(requested: "AVX-2", supported: [.portable, .avx2])?.contains("use portable, avx2 or vnni") == true)
        let model = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent("relu/model.onnx").path
        let run = try await KirokuProcess.run(["bench", "--model", model, "--runs", "100"], environment: ["KIROKU_KERNELS": "fast"])
        #expect(run.status == 2 && run.stderr.contains("KIROKU_KERNELS=fast is not a kernel build"), "\(run.status) \(run.stderr)")
    }

    @Test("each kernel set calls the module built for it (the AVX2 one compiled with KIROKU_AVX2, the VNNI one's 8-bit products with KIROKU_VNNI and its activations and float products with KIROKU_AVX512)")
    func builds() {
        #expect(KernelSet.portable.loops.build == "portable")
        #expect(KernelSet.portable.integer.bytes == nil && KernelSet.avx2.integer.bytes == nil)
        #if arch(x86_64)
        #expect(KernelSet.avx2.loops.build == "avx2" && KernelSet.vnni.loops.build == "avx2")
        #expect(KernelSet.vnni.integer.bytes?.instructions == "vnni")
        #expect(KernelSet.portable.loops.activationLanes == 8 && KernelSet.avx2.loops.activationLanes == 8
                && KernelSet.vnni.loops.activationLanes == 16)
        // The products 16 wide in one register: 8 output channels a direct block (6 in two halves in the AVX2 build).
        #expect(KernelSet.avx2.loops.directBlockChannels == 6 && KernelSet.vnni.loops.directBlockChannels == 8)
        #endif
    }

    @Test("the AVX2 build runs the direct_ fixtures' convolutions directly; the portable build through sgemm",
          arguments: ["direct_same_3x3_clip", "direct_valid_3x3_hardswish_batch2", "direct_dilated", "direct_7x1_residual_relu",
                      "direct_pointwise_widening_batch2", "direct_stride2_rows", "direct_transposed_7x7_residual_relu",
                      "direct_transposed_6x6_clip_batch2", "direct_transposed_hardswish"])
    func directConvolutions(_ name: String) throws {
        for (kernels, steps) in try stepsWithEachKernelSet(name) {
            let direct = steps.filter { $0.variant?.hasPrefix("direct ") == true }
            #expect(direct.count == (kernels == .portable ? 0 : 1), "\(name), \(kernels): \(steps)")
            // The residual is added as results are stored (7x1: no padded grid in between).
            // and the Relu after the Add runs in the same epilogue (one step for the three nodes).
            #expect(!name.contains("residual") || (steps.first?.operators == ["Conv", "Add", "Relu"] && steps.first?.variant?.hasSuffix("+ residual") == true),
                    "\(steps)")
        }
        #expect(KernelSet.avx2.loops.directConvolution != nil || !KernelSet.supported().contains(.avx2))
        #expect(KernelSet.portable.loops.directConvolution == nil)
    }

    @Test("the VNNI build multiplies two values known only at run time through panels packed per run; the others through sgemm")
    func runtimePanels() throws {
        for (kernels, all) in try stepsWithEachKernelSet("matmul_heads_broadcast") {
            let steps = all.filter { $0.op == "MatMul" }
            #expect(steps.count == 1 && (steps.first?.variant == "panels packed per run") == (kernels == .vnni), "\(kernels): \(steps)")
        }
    }

    @Test("the VNNI build runs the convolutions no direct plan takes (dilated, strided over narrow rows, rectangular, 1x1 ones beside them) through packed panels; the others through sgemm",
          arguments: ["conv_dilation2", "conv_same_lower_stride2", "conv_stride2_asym_pads", "conv_rect_kernel", "pointwise_siblings_merged"])
    func panelConvolutions(_ name: String) throws {
        for (kernels, steps) in try stepsWithEachKernelSet(name) {
            let panels = steps.filter { $0.variant?.hasPrefix("im2col panels") == true }
            #expect(panels.isEmpty == (kernels != .vnni) && steps.contains { $0.variant?.contains("sgemm") == true } == (kernels != .vnni),
                    "\(name), \(kernels): \(steps)")
        }
    }

    @Test("the VNNI build runs pointwise convolutions over a plane not whole strips of 16 (7x7: a tail of one) directly, not through unrolled panels; the AVX2 build, whose alternative is sgemm, keeps sgemm")
    func pointwiseTails() throws {
        for (kernels, steps) in try stepsWithEachKernelSet("direct_pointwise_tails_batch2") {
            let direct = steps.filter { $0.variant?.hasPrefix("direct 1x1/1") == true }
            #expect(direct.count == (kernels == .vnni ? 2 : 0) && !steps.contains { $0.variant?.hasPrefix("im2col panels") == true },
                    "\(kernels): \(steps)")
        }
    }

    /// The compiled steps of fixture `name` with each kernel set this CPU supports, on one thread.
    private func stepsWithEachKernelSet(_ name: String) throws -> [(KernelSet, [StepDescription])] {
        let url = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent("\(name)/model.onnx")
        let model = try Model(contentsOf: url)
        return try KernelSet.supported().map { ($0, try InferenceSession(model: model, threads: 1, kernels: $0).steps) }
    }
}
