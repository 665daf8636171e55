import Testing

@testable import KirokuInference

@Suite("Direct convolutions: strips, tails and bands")
struct DirectConvolutionPlanTests {
    /// Runs as the plans make them: one flat run (stride 1), or one per output row (strided).
    static let cases: [(runs: [(source: Int, target: Int, count: Int)], perBand: Int, threads: Int)] = [
        ([(0, 0, 21901)], 32, 2),  // InceptionV3's 147x147 layer on a pitch of 149: one run, one tail
        ([(0, 0, 1293)], 16, 2),  // 35x35 on a pitch of 37: 80 strips, 5 bands of 16 made 6
        ((0..<20).map { ($0 * 100, $0 * 21, 21) }, 3, 2),  // strided rows of 21: a tail per row
        ((0..<7).map { ($0 * 64, $0 * 32, 32) }, 2, 3),  // rows of whole strips, no tails, 3 threads
        ([(0, 0, 40), (100, 40, 40)], 1, 2),
        ([(0, 0, 17)], 8, 2),  // one strip and its tail: fewer strips than threads
    ]

    @Test("every strip is in one band, the bands a multiple of the threads, each tail with its run's last strip",
          arguments: cases.indices)
    func bands(_ index: Int) {
        let (runs, perBand, threads) = Self.cases[index]
        let (strips, tails, bands) = DirectConvolutionPlan.cut(runs, perBand: perBand, threads: threads)
        #expect(strips.count == runs.reduce(0) { $0 + $1.count / 16 })
        #expect(tails.count == runs.filter { $0.count % 16 != 0 }.count)
        #expect(bands.count % threads == 0 || bands.count == strips.count)
        #expect(bands.map(\.strips.count).reduce(0, +) == strips.count)
        #expect(zip(bands, bands.dropFirst()).allSatisfy { $0.strips.upperBound == $1.strips.lowerBound && $0.tails.upperBound == $1.tails.lowerBound })
        #expect(bands.first?.strips.lowerBound == 0 && bands.last?.tails.upperBound == tails.count)
        // Each tail runs in the band that holds the strip it overlaps (its run's last).
        for band in bands {
            for tail in tails[band.tails] {
                let overlapped = strips.firstIndex { $0.target <= tail.target && tail.target < $0.target + 16 && $0.source <= tail.source }
                #expect(overlapped.map { band.strips.contains($0) } == true, "tail at \(tail.target) runs apart from the strip it overlaps")
            }
        }
        // Bands differ in size by at most one strip.
        let sizes = bands.map(\.strips.count)
        #expect((sizes.max() ?? 0) - (sizes.min() ?? 0) <= 1)
    }
}
