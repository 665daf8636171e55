@testable import KirokuInference
import Testing

@Suite("quantization: calibration ranges and the integers written")
struct QuantizationCalibrationTests {
    @Test("the histogram keeps exact extremes across widenings and finds a percentile within one bin")
    func histogram() {
        var histogram = ValueHistogram()
        let first = (1...50_000).map { Float($0) }, second = (50_001...100_000).map { Float($0) } + [-3, .nan, .infinity]
        first.withUnsafeBufferPointer { histogram.add($0) }
        second.withUnsafeBufferPointer { histogram.add($0) }  // twice the first limit: the bins widen once
        #expect(histogram.count == 100_001)
        #expect(histogram.range(.minMax) == -3...100_000)
        let range = histogram.range(.percentile(99.9))
        let bin = Float(100_000) / Float(ValueHistogram.bins)
        #expect(range.map { abs($0.upperBound - 99_900) <= bin } == true, "\(String(describing: range))")
        #expect(range?.lowerBound == 0, "the one negative value is inside the clipped tail")
        #expect(ValueHistogram().range(.minMax) == nil)
    }

    @Test("activation scales and zero points map the range, widened to hold zero, onto 256 steps")
    func affine() {
        #expect(StaticQuantizer.affine(0...6, .uint8) == (6 / 255, 0))
        #expect(StaticQuantizer.affine(-1...3, .uint8) == (4 / 255, 64))
        #expect(StaticQuantizer.affine(-1...3, .int8) == (4 / 255, -64))
        #expect(StaticQuantizer.affine(2...4, .uint8) == (4 / 255, 0))
        #expect(StaticQuantizer.affine(-5...(-5), .int8) == (5 / 255, 127))
        #expect(StaticQuantizer.affine(0...0, .uint8) == (1, 0))
    }

    @Test("weights are symmetric per channel along their axis, rounding half to even")
    func symmetric() {
        let weights = Tensor(shape: [2, 3], data: [0.5, -1, 0.25, 0, 0, 0])
        let rows = StaticQuantizer.symmetric(weights, axis: 0, largest: 127)
        #expect(rows.scales == [1 / 127, 1])
        #expect(rows.values == [64, -127, 32, 0, 0, 0])  // 63.5 → 64, 31.75 → 32
        let columns = StaticQuantizer.symmetric(Tensor(shape: [2, 2], data: [31.5, 63, -63, 0.5]), axis: 1, largest: 63)
        #expect(columns.scales == [1, 1])
        #expect(columns.values == [32, 63, -63, 0])  // 31.5 → 32, 0.5 → 0
    }

    @Test("bias correction: the mean output shift of rounded weights, per output channel, through groups and both weight layouts")
    func outputShift() {
        // Depthwise (2 groups of 1 channel, 2 taps), channel means 1 and 10.
        let depthwise = Tensor(shape: [2, 1, 1, 2], data: [0.5, -0.25, 0.125, 0.125])
        #expect(StaticQuantizer.outputShift(depthwise, axis: 0, groups: 2, inputMeans: [1, 10]) == [0.25, 2.5])
        // Dense [M=1, C=2, 1 tap]: both input channels reach the one output.
        let dense = Tensor(shape: [1, 2, 1, 1], data: [1, 2])
        #expect(StaticQuantizer.outputShift(dense, axis: 0, groups: 1, inputMeans: [3, 4]) == [11])
        // A MatMul's [K=2, N=3]: output n sums column n.
        let matrix = Tensor(shape: [2, 3], data: [1, 2, 3, 4, 5, 6])
        #expect(StaticQuantizer.outputShift(matrix, axis: 1, groups: 1, inputMeans: [1, -1]) == [-3, -3, -3])
        #expect(StaticQuantizer.outputShift(matrix, axis: 1, groups: 1, inputMeans: [1]).isEmpty, "means of another length")
    }
}
