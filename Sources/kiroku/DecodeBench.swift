import Foundation
import KirokuInference
import KirokuQueue
import KirokuSupport
import KirokuVision

/// `kiroku bench --decode-only`: JPEG decode + preprocessing to the model's input, timed per image.
struct DecodeBench {
    let images: [String]
    let runs: Int
    let threads: Int
    let model: String?
    let json: Bool

    struct Report: Encodable {
        var images: Int
        var decodes: Int
        var threads: Int
        var msPerImageMean: Double
        var msPerImageP50: Double
        var imagesPerSecond: Double
        var megapixelsMean: Double
    }

    func run() throws {
        let preprocessor = ImagePreprocessor(sidecar: try ModelSidecar(model: try ModelLocation.resolve(model)))
        // Files are read first: the figure is decoding, not the disk.
        let files = try images.map { path throws -> [UInt8] in
            do { return Array(try Data(contentsOf: URL(fileURLWithPath: path))) } catch {
                throw UsageError(description: "cannot read \(path): \(error.localizedDescription)")
            }
        }
        let headerReader = JPEGDecoder()
        let megapixels = try files.map { bytes throws -> Double in
            let header = try headerReader.header(bytes)
            return Double(header.width * header.height) / 1e6
        }
        let perThread = (runs + threads - 1) / threads
        let timings = SharedValue([[Double]](repeating: [], count: threads))
        let failure = SharedValue<(any Error)?>(nil)
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let decoder = JPEGDecoder()
            var buffer = [Float](repeating: 0, count: preprocessor.floatsPerImage)
            var mine: [Double] = []
            do {
                for index in 0..<perThread {
                    let bytes = files[(thread * perThread + index) % files.count]
                    let began = ContinuousClock.now
                    try buffer.withUnsafeMutableBufferPointer { try preprocessor.prepare(bytes, decoder: decoder, into: $0) }
                    mine.append(began.duration(to: .now).milliseconds)
                }
            } catch {
                failure.withLock { $0 = error }
            }
            timings.withLock { $0[thread] = mine }
        }
        if let error = failure.value { throw error }
        let wall = start.duration(to: .now).milliseconds / 1000
        let all = timings.value.flatMap { $0 }.sorted()
        let report = Report(images: files.count, decodes: all.count, threads: threads,
                            msPerImageMean: all.reduce(0, +) / Double(all.count), msPerImageP50: percentile(sorted: all, 0.5),
                            imagesPerSecond: Double(all.count) / wall, megapixelsMean: megapixels.reduce(0, +) / Double(megapixels.count))
        if json {
            print(try JSONOutput.encode(report))
        } else {
            print(String(format: "decode + preprocess, %d images (%.1f MP mean), %d decodes on %d threads: mean %.2f ms, p50 %.2f ms per image; %.1f images/s",
                         report.images, report.megapixelsMean, report.decodes, threads, report.msPerImageMean, report.msPerImageP50, report.imagesPerSecond))
        }
    }
}

