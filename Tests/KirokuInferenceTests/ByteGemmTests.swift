import KirokuKernels
import Testing

@testable import KirokuInference

/// ByteGemm (unsigned bytes times signed bytes, the VNNI build's 8-bit products) against
/// IntegerGemm (int16 pairs): the same int32 sums, so the same outputs bit for bit.
@Suite("8-bit products: ByteGemm gives IntegerGemm's outputs")
struct ByteGemmTests {
    /// One product's operands: random centred input levels within `levels`, weights within int8.
    struct Case: CustomTestStringConvertible {
        let rows: Int, inputs: Int, channels: Int
        let levels: ClosedRange<Int>
        let bounds: ClosedRange<Int32>?
        var gate: IntegerLoops.Gate? = nil
        var testDescription: String {
            let activation = gate.map { $0.hard ? ", hard-swish" : ", SiLU" } ?? ""
            return "\(rows) rows of \(inputs) inputs, \(channels) channels, levels \(levels), \(bounds == nil ? "float" : "levels") out\(activation)"
        }
    }

    static let cases = [
        Case(rows: 13, inputs: 37, channels: 21, levels: -3...252, bounds: -3...252),     // uint8, zero point 3
        Case(rows: 6, inputs: 16, channels: 16, levels: -128...127, bounds: -128...127),  // int8
        Case(rows: 1, inputs: 3, channels: 5, levels: 0...255, bounds: 0...100),          // after Relu, a Clip's bounds
        Case(rows: 20, inputs: 300, channels: 40, levels: -200...55, bounds: nil),        // float output
        Case(rows: 14, inputs: 24, channels: 40, levels: -128...127, bounds: -128...127, gate: (false, 0.05)),  // SiLU to levels
        Case(rows: 9, inputs: 19, channels: 24, levels: -100...155, bounds: nil, gate: (true, 1)),            // hard-swish to floats
        // Whole tiles in pairs and an odd one (VNNI: 512-bit tiles two at a time), rows past the sixes.
        Case(rows: 25, inputs: 70, channels: 80, levels: -128...127, bounds: -128...127),
        Case(rows: 19, inputs: 33, channels: 64, levels: -128...127, bounds: -128...127, gate: (true, 0.05)),  // hard-swish to levels
    ]

    /// The builds of ByteGemm this CPU runs: the portable one (the reference semantics), and VNNI's.
    static var builds: [(name: String, gemm: IntegerLoops.Bytes)] {
        let portable = IntegerLoops.Bytes(instructions: KirokuKernels.ByteGemm.instructions, convert: KirokuKernels.ByteGemm.bytes,
                                          gemm: KirokuKernels.ByteGemm.run)
        return [("portable", portable)] + (KernelSet.supported().contains(.vnni) ? KernelSet.vnni.integer.bytes.map { [("vnni", $0)] } ?? [] : [])
    }

    @Test("the sums of shifted bytes less the shift's share equal the int16 sums: every build, odd shapes, level and float outputs, with and without an activation", arguments: cases)
    func sameOutputs(_ test: Case) throws {
        var random = SystemRandomNumberGenerator()
        let a = (0..<test.rows * test.inputs).map { _ in Int16(Int.random(in: test.levels, using: &random)) }
        let weights = (0..<test.channels * test.inputs).map { _ in Int64(Int.random(in: -128...127, using: &random)) }
        let scale = (0..<test.channels).map { _ in Float.random(in: 0.001...0.01, using: &random) }
        let offset = (0..<test.channels).map { _ in Float.random(in: -20...20, using: &random) }
        let tiles = (test.channels + 15) / 16
        let elements = test.rows * test.channels, bytesPerOutput = test.bounds == nil ? 4 : 2
        // Levels: rows by channels; floats: channels by rows (NCHW), as the kernel writes them.
        let strides = test.bounds == nil ? (row: 1, channel: test.rows) : (row: test.channels, channel: 1)

        var storage: [UnsafeMutableRawPointer] = []
        defer { storage.forEach { $0.deallocate() } }
        func kept<Value>(_ values: [Value]) -> UnsafePointer<Value> {
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(1, values.count) * MemoryLayout<Value>.stride + 64, alignment: 64)
            storage.append(pointer)
            values.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return UnsafePointer(pointer.assumingMemoryBound(to: Value.self))
        }
        let pairs = IntegerConvolutionKernel.packed(weights, method: .rows, groups: 1, merged: 1, outChannels: test.channels, inChannels: test.inputs, kernel: (1, 1),
                                                    store: { kept($0) })
        // IntegerGemm reads whole pairs: a row's last odd input pairs with a zero weight.
        let padded = kept(a + [0])
        let expected = UnsafeMutableRawPointer.allocate(byteCount: elements * bytesPerOutput, alignment: 64)
        defer { expected.deallocate() }
        KirokuKernels.IntegerGemm.run(a: padded, lda: test.inputs, rows: 0..<test.rows, pairs: pairs.pairs, weights: pairs.weights,
                                      tiles: 0..<tiles, channels: test.channels, scale: kept(scale), offset: kept(offset),
                                      bounds: test.bounds, gate: test.gate, output: expected, strides: strides)

        let shift = Int16(-test.levels.lowerBound)
        let packed = try #require(IntegerConvolutionKernel.packedBytes(weights, groups: 1, merged: 1, outChannels: test.channels, inChannels: test.inputs,
                                                                       taps: 1, shift: shift))
        for build in Self.builds {
            let stride = 4 * packed.quads
            let converted = UnsafeMutablePointer<UInt8>.allocate(capacity: test.rows * stride)
            let output = UnsafeMutableRawPointer.allocate(byteCount: elements * bytesPerOutput, alignment: 64)
            defer {
                converted.deallocate()
                output.deallocate()
            }
            build.gemm.convert(padded, test.inputs, test.rows, test.inputs, shift, converted, stride)
            #expect((0..<test.rows).allSatisfy { r in (0..<test.inputs).allSatisfy { Int(converted[r * stride + $0]) == Int(a[r * test.inputs + $0]) + Int(shift) } })
            // In two parts, as threads split the tiles.
            for part in [0..<tiles / 2, tiles / 2..<tiles] {
                build.gemm.gemm(converted, stride, 0..<test.rows, packed.quads, nil, kept(packed.weights), kept(packed.starts), part, test.channels,
                                kept(scale), kept(offset), test.bounds, test.gate, output, strides)
            }
            let (ours, reference) = (UnsafeRawBufferPointer(start: output, count: elements * bytesPerOutput),
                                     UnsafeRawBufferPointer(start: expected, count: elements * bytesPerOutput))
            #expect(ours.elementsEqual(reference), "\(build.name) (\(build.gemm.instructions)) differs")
        }
    }

    @Test("windows read in place tap by tap (a direct convolution) give the outputs of the same windows unrolled into rows: every build, levels and floats, outputs of fewer rows than six and rows across output rows",
          arguments: [(rows: 3, width: 7, channels: 40, bounds: Optional<ClosedRange<Int32>>(-128...127)), (rows: 1, width: 4, channels: 20, bounds: nil),
                      (rows: 2, width: 5, channels: 16, bounds: -3...252)])
    func windowsInPlace(_ shape: (rows: Int, width: Int, channels: Int, bounds: ClosedRange<Int32>?)) throws {
        var random = SystemRandomNumberGenerator()
        // A 2x3 window at strides 2 (down) and 1 over padded rows of 8 bytes a position.
        let (kernel, stride, quadChannels) = ((h: 2, w: 3), (h: 2, w: 1), 8)
        let columns = (shape.width - 1) * stride.w + kernel.w, inputRows = (shape.rows - 1) * stride.h + kernel.h
        let padded = (0..<inputRows * columns * quadChannels).map { _ in UInt8.random(in: 0...255, using: &random) }
        let taps = (0..<kernel.h).flatMap { ky in (0..<kernel.w).map { kx in (ky * columns + kx) * quadChannels } }
        let positions = shape.rows * shape.width, quads = quadChannels / 4, inputs = taps.count * quadChannels
        // The same windows unrolled: position r's row is its taps' bytes one after another.
        var unrolled = [UInt8]()
        for r in 0..<positions {
            let start = (r / shape.width) * stride.h * columns * quadChannels + (r % shape.width) * stride.w * quadChannels
            for tap in taps { unrolled += padded[(start + tap)..<(start + tap + quadChannels)] }
        }
        let weights = (0..<shape.channels * inputs).map { _ in Int64(Int.random(in: -128...127, using: &random)) }
        let packed = try #require(IntegerConvolutionKernel.packedBytes(weights, groups: 1, merged: 1, outChannels: shape.channels, inChannels: quadChannels,
                                                                       taps: taps.count, shift: 3))
        let scale = (0..<shape.channels).map { _ in Float.random(in: 0.001...0.01, using: &random) }
        let offset = (0..<shape.channels).map { _ in Float.random(in: -20...20, using: &random) }
        let tiles = (shape.channels + 15) / 16, bytesPerOutput = shape.bounds == nil ? 4 : 2
        let strides = shape.bounds == nil ? (row: 1, channel: positions) : (row: shape.channels, channel: 1)
        func product(_ gemm: IntegerLoops.Bytes, windows: Bool) -> [UInt8] {
            var output = [UInt8](repeating: 0, count: positions * shape.channels * bytesPerOutput)
            padded.withUnsafeBufferPointer { padded in
                unrolled.withUnsafeBufferPointer { unrolled in
                    taps.withUnsafeBufferPointer { taps in
                        output.withUnsafeMutableBytes { output in
                            // In two parts, as threads split the tiles.
                            for part in [0..<tiles / 2, tiles / 2..<tiles] {
                                gemm.gemm(windows ? padded.baseAddress! : unrolled.baseAddress!, inputs, 0..<positions, windows ? quads : quads * taps.count,
                                          windows ? (taps: taps, width: shape.width, lineBytes: stride.h * columns * quadChannels,
                                                     stepBytes: stride.w * quadChannels) : nil,
                                          packed.weights, packed.starts, part, shape.channels, scale, offset, shape.bounds, nil, output.baseAddress!, strides)
                            }
                        }
                    }
                }
            }
            return output
        }
        let reference = product(Self.builds[0].gemm, windows: false)
        for build in Self.builds {
            #expect(product(build.gemm, windows: true) == reference, "\(build.name) (\(build.gemm.instructions)) differs")
        }
    }

    @Test("weights outside int8 (8-bit unsigned weights far from their zero point) are not packed as bytes")
    func outsideInt8() {
        #expect(IntegerConvolutionKernel.packedBytes([3, 200, -7, 1], groups: 1, merged: 1, outChannels: 2, inChannels: 2, taps: 1, shift: 0) == nil)
        #expect(IntegerConvolutionKernel.packedBytes([3, 127, -128, 1], groups: 1, merged: 1, outChannels: 2, inChannels: 2, taps: 1, shift: 0) != nil)
    }

    @Test("a direct layer's split evens its 2 threads' work (RepVGG's 14x14 layers, where fixed bands of 4 rows gave them 8 and 6; its 7x7 layer of 80 tiles; a 112x112 one); on 1 thread the fewest bands of at most 64 KB")
    func directSplit() {
        func split(rows: Int, channels: Int, outChannels: Int, stride: Int = 1, threads: Int) -> (bands: Int, parts: Int) {
            let width = (rows - 1) * stride + 3
            return IntegerConvolutionKernel.directSplit(rows: rows, width: rows, mostBandRows: min(rows, 64 * 1024 / (width * channels * stride)),
                                                        tilePairs: (outChannels / 16 + 1) / 2, inputRows: { ($0 - 1) * stride + 3 },
                                                        rowBytes: width * channels, tapQuads: 9 * channels / 4, threads: threads)
        }
        // Each thread's six-row products by tile pairs (the loop hands thread t items t·n/2 to (t + 1)·n/2).
        func threadWork(_ split: (bands: Int, parts: Int), rows: Int, outChannels: Int) -> [Int] {
            let (items, pairs) = (split.bands * split.parts, (outChannels / 16 + 1) / 2)
            return (0..<2).map { t in
                (t * items / 2..<(t + 1) * items / 2).reduce(0) { work, item in
                    let (band, part) = (item / split.parts, item % split.parts)
                    let positions = ((band + 1) * rows / split.bands - band * rows / split.bands) * rows
                    return work + (positions + 5) / 6 * ((part + 1) * pairs / split.parts - part * pairs / split.parts)
                }
            }
        }
        func even(_ work: [Int]) -> Bool { abs(work[0] - work[1]) * 50 <= work[0] + work[1] }
        let repvgg = split(rows: 14, channels: 192, outChannels: 192, threads: 2)
        #expect(even(threadWork(repvgg, rows: 14, outChannels: 192)), "\(repvgg): \(threadWork(repvgg, rows: 14, outChannels: 192))")
        let last = split(rows: 7, channels: 192, outChannels: 1280, stride: 2, threads: 2)
        #expect(even(threadWork(last, rows: 7, outChannels: 1280)), "\(last)")
        #expect(split(rows: 112, channels: 16, outChannels: 16, threads: 1) == (bands: 4, parts: 1), "112 rows of 114 x 16 bytes: 35 rows a band")
        let large = split(rows: 112, channels: 16, outChannels: 16, threads: 2)
        #expect(large.bands >= 4 && (112 + large.bands - 1) / large.bands <= 35 && even(threadWork(large, rows: 112, outChannels: 16)), "\(large)")
    }
}
