import ArgumentParser
import Foundation
import KirokuInference
import KirokuQueue
import KirokuSupport

/// `kiroku bench`: the engine's speed, measured the seed's way.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure inference: ms per image (mean, p50, p99 over the runs after warm-up), session creation, and a new session per image versus a reused one.",
        discussion: "With --decode-only --images PATH...: decode + preprocess to the default model's input instead, no inference; --runs decodes in all, cycling through the images; --threads spreads them over that many threads.")

    @OptionGroup var engine: EngineOptions

    @Option(help: "Images per run.")
    var batch: Int = 1

    @Option(help: "Timed runs after warm-up (at least 100 for the seed's method).")
    var runs: Int = 100

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "Also print where the time goes, per operator kind.")
    var profile = false

    @Flag(help: "With --profile: every step's time too, in execution order.")
    var steps = false

    @Flag(help: "Measure decode + preprocess only (needs --images).")
    var decodeOnly = false

    @Option(parsing: .upToNextOption, help: "JPEG files for --decode-only.")
    var images: [String] = []

    func validate() throws {
        guard batch >= 1, runs >= 1 else { throw ValidationError("--batch and --runs must be at least 1") }
        if decodeOnly && images.isEmpty { throw ValidationError("--decode-only needs --images PATH...") }
        if steps && !profile { throw ValidationError("--steps goes with --profile") }
    }

    struct Report: Encodable {
        var model: String
        var batch: Int
        var threads: Int
        var kernels: String
        /// The model's precision and the arithmetic that ran it.
        var precision: String
        /// For an int8 model: which layers this CPU runs on integer kernels, and the timings behind the choice.
        var integerLayers: IntegerLayers?
        var runs: Int
        var msPerImageMean: Double
        var msPerImageP50: Double
        var msPerImageP99: Double
        var sessionCreateMs: Double
        var newSessionPerImageMs: Double
        var multiplyAddsPerImage: Int
        var gflops: Double
        var peakRssMb: Double
        var rssGrowthMb: Double
    }

    func run() throws {
        if decodeOnly { return try DecodeBench(images: images, runs: runs, threads: engine.threads ?? 1, model: engine.model, json: json).run() }
        let url = try engine.modelURL()
        let loaded = try Model(contentsOf: url)
        let createStart = ContinuousClock.now
        let session = try InferenceSession(model: loaded, batchSize: batch, threads: engine.threads, integerLayers: engine.integerLayers.choice)
        let sessionCreate = createStart.duration(to: .now).milliseconds
        // A fixed pseudo-random input: speed does not depend on the values.
        var generator = SystemRandomNumberGenerator()
        let input = session.inputShapes.map { shape in
            Tensor(shape: shape, data: (0..<shape.reduce(1, *)).map { _ in Float.random(in: -1...1, using: &generator) })
        }
        for _ in 0..<max(5, runs / 10) { _ = try session.run(input) }
        let rssBefore = Self.residentMegabytes("VmRSS")
        var perImage: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            _ = try session.run(input)
            perImage.append(start.duration(to: .now).milliseconds / Double(batch))
        }
        let rssAfter = Self.residentMegabytes("VmRSS")
        // The seed's untuned baseline: a session opened for every image.
        let fresh = try (0..<3).map { _ throws -> Double in
            let start = ContinuousClock.now
            _ = try InferenceSession(model: loaded, batchSize: batch, threads: engine.threads, integerLayers: engine.integerLayers.choice).run(input)
            return start.duration(to: .now).milliseconds / Double(batch)
        }
        perImage.sort()
        let mean = perImage.reduce(0, +) / Double(perImage.count)
        let macs = session.multiplyAdds / batch
        let report = Report(
            model: loaded.name, batch: batch, threads: session.threads, kernels: session.kernels.rawValue,
            precision: Self.precision(loaded, session), integerLayers: loaded.precision == .int8QDQ ? session.integerLayers : nil, runs: runs,
            msPerImageMean: mean, msPerImageP50: percentile(sorted: perImage, 0.5), msPerImageP99: percentile(sorted: perImage, 0.99),
            sessionCreateMs: sessionCreate, newSessionPerImageMs: fresh.reduce(0, +) / Double(fresh.count),
            multiplyAddsPerImage: macs, gflops: 2 * Double(macs) / (percentile(sorted: perImage, 0.5) / 1000) / 1e9,
            peakRssMb: Self.residentMegabytes("VmHWM"), rssGrowthMb: rssAfter - rssBefore)
        if json {
            print(try JSONOutput.encode(report))
            return
        }
        print(String(format: """
            %@: batch %d, %d threads, %@ kernels, %@, %d runs
              per image: mean %.2f ms, p50 %.2f ms, p99 %.2f ms (%.1f GFLOP/s on %.0f M multiply-adds)
              session creation %.1f ms; a new session per image %.1f ms/image (%.1fx the reused session)
              peak RSS %.0f MB, growth over the runs %.1f MB
            """, report.model, batch, report.threads, report.kernels, report.precision, runs, report.msPerImageMean, report.msPerImageP50, report.msPerImageP99,
            report.gflops, Double(macs) / 1e6, report.sessionCreateMs, report.newSessionPerImageMs,
            report.newSessionPerImageMs / report.msPerImageP50, report.peakRssMb, report.rssGrowthMb))
        if profile {
            var byKind: [String: (ms: Double, steps: Int)] = [:]
            for step in session.profile(runs: 20) {
                if steps { print(String(format: "  %8.3f ms  ", step.milliseconds) + step.label) }
                let kind = step.label.firstIndex(of: "(").map { String(step.label[$0...]) } ?? String(step.label.prefix { $0 != " " })
                byKind[kind, default: (0, 0)].ms += step.milliseconds
                byKind[kind, default: (0, 0)].steps += 1
            }
            for (kind, total) in byKind.sorted(by: { $0.value.ms > $1.value.ms }) {
                print("  \(kind.padding(toLength: 26, withPad: " ", startingAt: 0)) \(String(format: "%3d steps %8.2f ms", total.steps, total.ms))")
            }
        }
    }

    /// The model's precision and the arithmetic that ran it: "fp32", or for a QDQ model the share
    /// of its multiply-adds on the int8 kernels ("int8-qdq, 99% of multiply-adds on int8 kernels").
    static func precision(_ model: Model, _ session: InferenceSession) -> String {
        guard model.precision == .int8QDQ else { return model.precision.rawValue }
        return "int8-qdq, " + session.integerLayers.summary
    }

    /// A memory figure of this process from /proc/self/status, in MB.
    static func residentMegabytes(_ field: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes / 1024
    }
}
