import Foundation
import Testing

@testable import KirokuInference
import KirokuKernelsAVX512

@Suite("Chains of convolutions run on channel-blocked data in the AVX2 build",
       .enabled(if: KernelSet.supported().contains(.avx2), "this CPU lacks AVX2 or FMA"))
struct ChannelBlocksTests {
    /// The steps of `model` with the AVX2 kernels, each Conv by its variant ("blocked pointwise
    /// 1x1/1", ...), moves by their labels, other steps left out. A blocked convolution writes
    /// channel blocks; any other, NCHW.
    static func steps(_ model: Model) throws -> [String] {
        try InferenceSession(model: model, threads: 1, kernels: .avx2).steps.compactMap { step in
            switch step.kind {
            case .toChannelBlocks, .fromChannelBlocks: return step.label
            case .node where step.op == "Conv":
                #expect((step.variant?.hasPrefix("blocked") == true) == (step.layout == .channelBlocks), "\(step)")
                return step.variant
            default: return nil
            }
        }
    }

    /// The layout moves among `steps`.
    static func moves(_ steps: [StepDescription]) -> [StepDescription.Kind] {
        steps.map(\.kind).filter { $0 == .toChannelBlocks || $0 == .fromChannelBlocks }
    }

    @Test("the blocked fixtures take the blocked kernels, moving values only where a chain starts or ends, so their comparison with ONNX Runtime checks them")
    func chosen() throws {
        // The input moved into blocks once: the first convolution and the residual Add share it.
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_mbconv_residual_batch2")) == [
            "to channel blocks", "blocked pointwise 1x1/1", "blocked depthwise 5x5/1", "blocked pointwise 1x1/1 + residual",
            "blocked depthwise 3x3/2", "blocked pointwise 1x1/1", "from channel blocks",
        ])
        // ResNet's bottleneck: the Relu after the residual Add runs in the convolution's epilogue; a
        // 1x1 summed with its own input is one convolution (the identity in its weights, the Clip
        // in its epilogue); the values stay in blocks from the first convolution to the last.
        let bottleneck = try InferenceSession(model: ReferenceCase.model(named: "blocked_bottleneck_residual_relu_batch2"), threads: 1,
                                              kernels: .avx2).steps
        #expect(bottleneck.filter { $0.op == "Conv" }.map(\.operators) == [["Conv"], ["Conv"], ["Conv", "Add", "Relu"], ["Conv"], ["Conv"]]
                && Self.moves(bottleneck) == [.toChannelBlocks, .fromChannelBlocks], "\(bottleneck)")
        // StarNet's product of two branches runs over the blocks: one move in, one out.
        let star = try InferenceSession(model: ReferenceCase.model(named: "blocked_star_product_batch2"), threads: 1, kernels: .avx2).steps
        #expect(star.contains { $0.op == "Mul" && $0.layout == .channelBlocks && $0.operators == ["Mul"] }
                && Self.moves(star) == [.toChannelBlocks, .fromChannelBlocks], "\(star)")
        // DenseNet's layers: the per-channel Mul and the Relu after it run over the blocks in one pass,
        // so the values stay in blocks from the first convolution to the last.
        let dense = try InferenceSession(model: ReferenceCase.model(named: "blocked_dense_scale_relu_batch2"), threads: 1, kernels: .avx2).steps
        let scales = dense.filter { $0.op == "Mul" }
        #expect(scales.count == 2 && scales.allSatisfy { $0.operators == ["Mul", "Relu"] && $0.variant == "over channel blocks" && $0.layout == .channelBlocks }
                && Self.moves(dense) == [.toChannelBlocks, .fromChannelBlocks], "\(dense)")
        // RegNet's grouped convolutions, a group per block, between pointwise ones: one chain.
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_groups_of_8_batch2")) == [
            "to channel blocks", "blocked pointwise 1x1/1", "blocked by groups of 8 3x3/1", "blocked pointwise 1x1/1",
            "blocked by groups of 8 3x3/2", "blocked pointwise 1x1/1", "from channel blocks",
        ])
        // Groups of 16 and 24 channels (RegNetX's) are whole blocks too.
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_groups_of_16_and_24_batch2")) == [
            "to channel blocks", "blocked pointwise 1x1/1", "blocked by groups of 16 3x3/1", "blocked pointwise 1x1/1",
            "blocked by groups of 24 3x3/2", "blocked pointwise 1x1/1", "from channel blocks",
        ])
        // EfficientNet-B0's block: squeeze-excitation's scale runs over the blocks, so the block is one
        // chain; SiLU joins the convolutions.
        let excitation = try InferenceSession(model: ReferenceCase.model(named: "blocked_squeeze_excitation_silu_batch2"), threads: 1,
                                              kernels: .avx2).steps
        #expect(excitation.contains { $0.op == "Mul" && $0.variant == "over channel blocks" && $0.layout == .channelBlocks }
                && Self.moves(excitation) == [.toChannelBlocks, .fromChannelBlocks], "\(excitation)")
        // GhostNet's module: a Slice of all the Concat's channels (a Pad of nothing, an Expand to the
        // same shape) is the Concat's value, in blocks: no step of its own and no move but the output's.
        let ghost = try InferenceSession(model: ReferenceCase.model(named: "identity_copies_of_blocks_batch2"), threads: 1, kernels: .avx2).steps
        #expect(ghost.map(\.op) == ["toChannelBlocks", "Conv", "Conv", "Conv", "Conv", "fromChannelBlocks", "fromChannelBlocks"]
                && ghost.filter { $0.op == "Conv" }.allSatisfy { $0.layout == .channelBlocks }, "\(ghost)")
        // A stem writes blocks itself.
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_stem_overlapping_tiles")) == [
            "blocked from planes 3x3/2", "blocked depthwise 3x3/1", "blocked pointwise 1x1/1", "from channel blocks",
        ])
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_plane7_pair")) == [
            "to channel blocks", "blocked pointwise 1x1/1", "blocked pointwise 1x1/1", "from channel blocks",
        ])
        // Planes not whole runs of 8 positions (7x7, 14x14, 2x7): every convolution on blocks, so the
        // comparison with ONNX Runtime checks the AVX-512 build's short last runs and whole-run chunks.
        let shortRuns = try Self.steps(ReferenceCase.model(named: "blocked_pointwise_short_runs"))
        #expect(shortRuns.filter { $0.hasPrefix("blocked") }
                == ["blocked pointwise 1x1/1", "blocked pointwise 1x1/1 + residual"] + Array(repeating: "blocked pointwise 1x1/1", count: 4),
                "\(shortRuns)")
        // A residual Add of two members passes the chain on: the expansion after it, read by a global
        // pooling alone, stays in blocks (MobileNetV4's end), which the pooling reads as they are.
        let residual = try InferenceSession(model: ReferenceCase.model(named: "residual_add_passes_the_chain_batch2"), threads: 1,
                                            kernels: .avx2).steps
        #expect(Self.moves(residual) == [.toChannelBlocks]
                && residual.filter { $0.op == "Conv" }.map(\.layout) == Array(repeating: .channelBlocks, count: 4), "\(residual)")
        // Pointwise convolutions over 4 positions (fewer than a tile) stay on NCHW, the depthwise between them in blocks.
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_chain_small_plane")) == [
            "pointwise sgemm", "to channel blocks", "blocked depthwise 3x3/1", "from channel blocks", "pointwise sgemm",
        ])
        // Both poolings read the chain's last value in blocks: the input's move is the only one.
        let pools = try InferenceSession(model: ReferenceCase.model(named: "blocked_global_pools_batch2"), threads: 1, kernels: .avx2).steps
        #expect(pools.filter { $0.variant == "over channel blocks" }.count == 2 && Self.moves(pools) == [.toChannelBlocks], "\(pools)")
        // Windows of every shape between blocks: only the input and the output move.
        #expect(try Self.steps(ReferenceCase.model(named: "blocked_windows_chain")) == [
            "to channel blocks", "blocked 3x3/1", "blocked 1x5/1", "blocked 5x1/1", "blocked 3x3/2", "from channel blocks",
        ])
        // Merged siblings write slices of one blocked value, which the Concat takes as they are.
        let siblings = try InferenceSession(model: ReferenceCase.model(named: "pointwise_siblings_batch2"), threads: 1, kernels: .avx2).steps
        #expect(siblings.map(\.op) == ["toChannelBlocks", "Conv", "Concat", "fromChannelBlocks"], "\(siblings)")
        #expect(siblings[1].variant == "blocked pointwise 1x1/1" && siblings[1].isMerged && siblings[2].layout == .channelBlocks, "\(siblings)")
        let windows = try #require(ReferenceCase.large.first { $0.name == "blocked_windows_batch2" }, "run make test's fixture step")
        #expect(try Self.steps(windows.model()) == [
            "to channel blocks", "blocked winograd 3x3/1", "blocked 5x5/1", "blocked 1x7/1", "blocked 7x1/1", "blocked 3x3/2", "from channel blocks",
        ])
        // Every window pooling reads and writes blocks, so only the input and the output move.
        let windowPools = try #require(ReferenceCase.large.first { $0.name == "blocked_pools_batch2" }, "run make test's fixture step")
        let poolSteps = try InferenceSession(model: windowPools.model(), threads: 1, kernels: .avx2).steps
        let windowPoolSteps = poolSteps.filter { ["MaxPool", "AveragePool"].contains($0.op) }
        #expect(windowPoolSteps.count == 4
                && windowPoolSteps.allSatisfy { $0.variant?.hasSuffix("over channel blocks") == true && $0.layout == .channelBlocks }, "\(poolSteps)")
        #expect(Self.moves(poolSteps) == [.toChannelBlocks, .fromChannelBlocks], "\(poolSteps)")
        #expect(poolSteps.contains { $0.op == "AveragePool" && $0.variant == "then the convolution's bias and activation, over channel blocks" },
                "\(poolSteps)")
        let wide = try #require(ReferenceCase.large.first { $0.name == "blocked_wide_rows_batch2" }, "run make test's fixture step")
        #expect(try Self.steps(wide.model()) == [
            "blocked from planes 3x3/2", "blocked depthwise 3x3/1", "blocked pointwise 1x1/1", "blocked depthwise 3x3/2",
            "blocked depthwise 3x3/1", "blocked pointwise 1x1/1", "from channel blocks",
        ])
    }

    @Test("a convolution with no neighbour in a chain, or merged with its siblings, stays on NCHW")
    func loneConvolutions() throws {
        for name in ["conv_1x1_batch2", "direct_pointwise_widening_batch2", "conv_depthwise_stride2", "depthwise_lanes_stride2_clip",
                     "direct_transposed_7x7_residual_relu", "pointwise_siblings_merged", "net_conv_bn_relu"] {
            let steps = try Self.steps(ReferenceCase.model(named: name))
            #expect(!steps.contains { $0.contains("blocked") || $0.contains("channel blocks") }, "\(name): \(steps)")
        }
    }

    @Test("EfficientNet-Lite0 runs as one chain, from its stem to its pooling, with no move")
    func efficientNet() throws {
        let model = try Model(contentsOf: DefaultModelTests.models.appendingPathComponent("efficientnet-lite0.onnx"))
        let all = try InferenceSession(model: model, threads: 1, kernels: .avx2).steps
        let steps = try Self.steps(model)
        #expect(steps.first == "blocked from planes 3x3/2" && steps.allSatisfy { $0.hasPrefix("blocked") }, "\(steps)")
        #expect(all.contains { $0.op == "GlobalAveragePool" && $0.variant == "over channel blocks" }, "\(all)")
    }
}

@Suite("Work items of convolutions into channel blocks")
struct TileWorkTests {
    @Test("every tile and pair of output blocks is in exactly one item, a chunk's tiles consecutive, at least two a chunk where there are two, whole granules of tiles but the last, chunks within a granule of each other",
          arguments: [1, 2, 3, 4])
    func coverage(threads: Int) {
        for granule in [1, 4] {
            for tiles in [1, 2, 3, 5, 9, 17, 100, 2091] {
                for pairs in [1, 2, 3, 5, 40, 80] {
                    for tileBytes in [24, 648, 27_648, 200_000] {
                        let work = TileWork(tiles: tiles, pairs: pairs, tileBytes: tileBytes, threads: threads, granule: granule)
                        var seen = [Int](repeating: 0, count: tiles * pairs)
                        let units = max(1, tiles / granule), context = "\(tiles) tiles in \(work.chunks) chunks, granule \(granule)"
                        for index in 0..<work.count {
                            let item = work.item(index)
                            #expect(!item.pairs.isEmpty && item.pairs.count <= pairs / work.pairChunks + 1, "\(pairs) pairs in \(work.pairChunks): item \(item)")
                            #expect(item.tiles.count >= min(2, tiles), "\(context): item \(item)")
                            #expect(item.tiles.lowerBound % granule == 0 && (item.tiles.upperBound == tiles || item.tiles.upperBound % granule == 0),
                                    "\(context): item \(item)")
                            #expect(item.tiles.count <= (units / work.chunks + 1) * granule + tiles % granule, "\(context): item \(item)")
                            for t in item.tiles { for p in item.pairs { seen[t * pairs + p] += 1 } }
                        }
                        #expect(seen.allSatisfy { $0 == 1 }, "\(tiles) tiles, \(pairs) pairs, \(tileBytes) bytes a tile, \(threads) threads, granule \(granule)")
                    }
                }
            }
        }
    }

    @Test("a chunk of a pointwise convolution in runs of 8 positions is whole runs: tiles of 6 in fours")
    func granules() {
        #expect(BlockedPointwisePlan.granule(run: 8) == 4)
        #expect(BlockedPointwisePlan.granule(run: 0) == 1)
        #expect(BlockedPointwisePlan.granule(run: 6) == 1)
    }

    @Test("the AVX-512 pointwise kernel's runs of 5 to 8 positions reach a span's end, computing each position once in spans of 10 or more (and of 5 to 8), in as few runs as runs of 8 take")
    func runs() {
        for span in 5...500 {
            var (start, computed, counts) = (0, 0, [Int]())
            while start < span {
                let count = KirokuKernelsAVX512.BlockedPointwise.run(left: span - start)
                let position = min(start, span - count)
                counts.append(count)
                computed += count
                start = position + count
            }
            #expect(counts.allSatisfy { (5...8).contains($0) } && start == span, "span \(span): \(counts)")
            #expect(computed == span + (span == 9 ? 1 : 0), "span \(span): \(counts)")
            #expect(counts.count == (span + 7) / 8, "span \(span): \(counts) (no more runs than runs of 8 take)")
        }
    }
}
