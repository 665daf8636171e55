import ArgumentParser
import Foundation
import KirokuInference
import KirokuSupport
import KirokuVision

/// `kiroku quantize`: static int8 quantization calibrated on the operator's own photos through
/// Kiroku's own preprocessing, checked against the float model on photos it did not calibrate on.
struct Quantize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Quantize a float model to int8 (QDQ ONNX), calibrated on your own photos.",
        discussion: """
            The photos are split: every other one (--held-out 50) is held out; the rest calibrate \
            the activation ranges. The held-out photos then run through the float and the int8 \
            model, which are compared on what a user consumes: the sidecar's decision (food or not), \
            and the top-1 class on the decisive photos (where the float model's top class leads its \
            runner-up by --decisive-margin in probability; near ties flip under any rounding), each \
            with its 95% interval, and the mean squared logit difference. The model is written only \
            when both agreements reach --min-agreement percent (or with --force). The sidecar is \
            copied beside the output. \
            Last, both models are timed on this host, alternated: whether int8 is faster depends on \
            the CPU, so time them with `kiroku bench` on the hosts that will serve them too.
            """)

    @OptionGroup var engine: EngineOptions

    @Option(parsing: .upToNextOption, help: "Photos to calibrate on and check with: files or directories (searched recursively, sorted).")
    var calibrate: [String]

    @Option(help: "Calibrate on at most this many photos (default: every photo not held out).")
    var images: Int?

    @Option(help: "Where to write the int8 model (its sidecar goes beside it, FILE.json).")
    var output: String

    @Option(help: "Activation ranges: percentile (clips the rarest values, default) or minmax.")
    var method: RangeMethod = .percentile

    @Option(help: "The percentile kept at each end with --method percentile.")
    var percentile: Double = 99.999

    @Option(help: "The type activations are rounded to: uint8 (default) or int8.")
    var activations: StaticQuantizer.ActivationType = .uint8

    @Option(help: "Bits of each weight: 8 (default), or 7 for ONNX Runtime's AVX2 kernels, which saturate on 8-bit weights.")
    var weightBits: Int = 8

    @Option(parsing: .upToNextOption,
            help: "Leave these nodes (ONNX node names; an unnamed node by its first output) or operator types (e.g. Gemm, Conv) float: their rounding error goes, and so does their int8 speed.")
    var keepFloat: [String] = []

    @Flag(inversion: .prefixedNo, help: "Correct each bias for the mean shift its rounded weights cause on the calibration photos.")
    var biasCorrection = true

    @Option(help: "Percent of the photos held out of calibration to measure agreement on.")
    var heldOut: Double = 50

    @Option(help: "The least agreement with the float model, in percent, on the decision and on the decisive photos' top-1, for the model to be written.")
    var minAgreement: Double = 98

    @Option(help: "A photo is decisive when the float model's top class leads its runner-up by at least this, in probability.")
    var decisiveMargin: Double = 0.1

    @Flag(help: "Also leave each layer float in turn, on up to 32 calibration photos, and list the 10 layers whose rounding costs the most output error (all in --json): the ones to try with --keep-float.")
    var sensitivity = false

    @Option(help: "Automatic mixed precision: leave float the fewest layers, in the order --sensitivity ranks them, until the mean squared logit difference on the calibration photos is at most this (e.g. 0.005); the held-out photos then confirm it. The report names the layers and the speed each costs.")
    var targetMse: Double?

    @Flag(help: "Write the model even when its agreement is under --min-agreement.")
    var force = false

    @Option(help: "Timed runs of each model, alternated, to compare their speed on this host (0 skips it).")
    var speedRuns = 20

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    enum RangeMethod: String, ExpressibleByArgument, CaseIterable {
        case percentile, minmax
    }

    func validate() throws {
        guard !calibrate.isEmpty else { throw ValidationError("give --calibrate DIR|FILE... (photos like the ones the model will see)") }
        if let images, images < 1 { throw ValidationError("--images must be at least 1") }
        guard percentile > 50, percentile <= 100 else { throw ValidationError("--percentile must be over 50 and at most 100 (e.g. 99.999)") }
        guard heldOut >= 0, heldOut < 100 else { throw ValidationError("--held-out must be a percent from 0 up to (not including) 100") }
        guard minAgreement >= 0, minAgreement <= 100 else { throw ValidationError("--min-agreement must be a percent from 0 to 100") }
        guard decisiveMargin >= 0, decisiveMargin < 1 else { throw ValidationError("--decisive-margin must be a probability from 0 up to (not including) 1, e.g. 0.1") }
        if let targetMse, !(targetMse >= 0) { throw ValidationError("--target-mse must be a mean squared logit difference of 0 or more, e.g. 0.005") }
        guard speedRuns >= 0 else { throw ValidationError("--speed-runs must be 0 (skip the speed check) or more") }
        guard weightBits == 7 || weightBits == 8 else { throw ValidationError("--weight-bits must be 8 or 7") }
        guard output.hasSuffix(".onnx") else { throw ValidationError("--output must name an .onnx file (its sidecar goes beside it as .json)") }
    }

    struct Report: Encodable {
        var model: String
        var output: String
        var written: Bool
        var method: String
        var activations: String
        var weightBits: Int
        var quantizedActivations: Int
        var keptFloat: [String]
        /// With --target-mse: the layers left float to meet it, in order, and what each cost.
        var mixedPrecision: MixedPrecision?
        var calibrationImages: Int
        var heldOutImages: Int
        var skippedFiles: [String]
        /// What the model is accepted on, over the held-out photos.
        var acceptance: Acceptance
        /// Top-1 agreement over every held-out photo and the mean top-5 overlap, percent (nil when none could be checked).
        var top1Agreement: Double?
        var meanTop5Overlap: Double?
        var disagreements: [Disagreement]
        /// The two models' speed on this host; nil with --speed-runs 0.
        var speed: Speed?
        /// Each layer's share of the output error; nil without --sensitivity.
        var sensitivity: Sensitivity?
    }

    /// The measures the model is accepted on: agreement on the decision (nil when the sidecar lists
    /// no food classes), top-1 agreement on the decisive photos, both at least `minAgreement`; the
    /// mean squared logit difference, a measure of rounding error that near ties do not make jump.
    struct Acceptance: Encodable {
        var decision: Proportion?
        var decisiveMargin: Double
        var decisiveTop1: Proportion
        var meanSquaredLogitDifference: MeanInterval
        var minAgreement: Double
        /// Why the model falls short; empty when it is accepted.
        var shortfalls: [String]

        init(_ count: AgreementCount, margin: Double, minAgreement: Double) {
            (decision, decisiveTop1, meanSquaredLogitDifference) = (count.decision, count.decisiveTop1, MeanInterval(count.squaredDifferences))
            (decisiveMargin, self.minAgreement) = (margin, minAgreement)
            var shortfalls: [String] = []
            if let decision, decision.rate * 100 < minAgreement {
                shortfalls.append(String(format: "the decision agrees on %.1f%% of %d held-out photos", decision.rate * 100, decision.trials))
            }
            if decisiveTop1.trials == 0 {
                shortfalls.append(String(format: "no held-out photo is decisive (top class ahead by %.2f): top-1 is unmeasured", margin))
            } else if decisiveTop1.rate * 100 < minAgreement {
                shortfalls.append(String(format: "top-1 agrees on %.1f%% of the %d decisive photos", decisiveTop1.rate * 100, decisiveTop1.trials))
            }
            self.shortfalls = shortfalls
        }
    }

    /// Automatic mixed precision: the layers left float, in `--sensitivity`'s order, until the
    /// calibration photos' mean squared logit difference was at most the target.
    struct MixedPrecision: Encodable {
        /// One layer left float: the error and the int8 model's time on this host after it.
        struct Layer: Encodable {
            var node: String, opType: String
            var meanSquaredOutputDifference: Double
            var msPerImage: Double
        }
        var target: Double
        /// The error with every layer on integer kernels, and at the end.
        var baseline: Double, achieved: Double
        var met: Bool
        /// The int8 model's time on this host before any layer was left float (batch 1, every layer on integer kernels).
        var baselineMsPerImage: Double
        var layers: [Layer]
    }

    /// The int8 model's speed beside the float model's on this host: batch 1, the same threads, its
    /// layers on integer or float kernels as the session chose for this CPU.
    struct Speed: Encodable {
        var kernels: String
        var integerLayers: IntegerLayers
        var threads: Int
        var runs: Int
        var floatMsPerImage: Double
        var int8MsPerImage: Double
        /// The float model's time over the int8 model's: over 1 when int8 is the faster here.
        var speedUp: Double
    }

    /// The output error on calibration photos as quantized, and with each quantized layer alone
    /// left float as well, the layer that lowers it most first.
    struct Sensitivity: Encodable {
        var photos: Int
        /// As quantized (every layer --keep-float does not name on int8).
        var baseline: Double
        var layers: [LayerSensitivity.Layer]
    }

    /// A held-out photo on which the two models' top classes differ, with each one's probability,
    /// and the float model's second class (how near a tie the float answer was).
    struct Disagreement: Encodable {
        var file: String
        var float: ModelSidecar.Prediction
        var floatRunnerUp: ModelSidecar.Prediction?
        var int8: ModelSidecar.Prediction
    }

    func run() throws {
        let modelURL = try engine.modelURL(), threads = engine.threads
        guard modelURL.resolvingSymlinksInPath().standardizedFileURL != URL(fileURLWithPath: output).resolvingSymlinksInPath().standardizedFileURL else {
            throw UsageError(description: "--output is the float model itself: write the int8 model to another file")
        }
        let sidecar = try ModelSidecar(model: modelURL)
        let quantizer = try planQuantization(modelURL)
        let files = try ImageFileList.collect(calibrate)
        // Photo i is held out when the running count of held-out photos steps up there (in
        // hundredths of a percent, in integers: no rounding moves a photo across).
        let share = Int((heldOut * 100).rounded())
        let split = files.indices.map { ($0 + 1) * share / 10_000 > $0 * share / 10_000 }
        let calibrationFiles = Array(files.indices.filter { !split[$0] }.map { files[$0] }.prefix(images ?? .max))
        let heldOutFiles = files.indices.filter { split[$0] }.map { files[$0] }
        guard !calibrationFiles.isEmpty else { throw UsageError(description: "no photos left to calibrate on: give more photos or a smaller --held-out") }
        guard !heldOutFiles.isEmpty || force else {
            throw UsageError(description: "no held-out photos to measure agreement on: give more photos, a larger --held-out, or --force")
        }

        let preparer = PhotoPreparer(sidecar: sidecar)
        var skipped: [String] = []
        let calibrator = try Calibrator(quantizer, threads: threads)
        guard calibrator.inputShape.reduce(1, *) == preparer.preprocessor.floatsPerImage else {
            throw UsageError(description: "the sidecar's input (3x\(sidecar.input.height)x\(sidecar.input.width)) does not match the model's input \(calibrator.inputShape): fix the sidecar")
        }
        var scanInputs: [[Float]] = []
        skipped += eachPhoto(calibrationFiles, label: "calibrating", preparer) { input, _ in
            try calibrator.observe(input)
            if (sensitivity || targetMse != nil) && scanInputs.count < 32 { scanInputs.append(input) }
        }
        guard calibrator.images > 0 else { throw UsageError(description: "none of the \(calibrationFiles.count) calibration photos could be read") }

        let rangeMethod: CalibrationMethod = method == .minmax ? .minMax : .percentile(percentile)
        let (ranges, means) = (calibrator.ranges(rangeMethod), biasCorrection ? calibrator.channelMeans() : [:])
        let quantize = { [activations, weightBits] (plan: StaticQuantizer) throws(InferenceError) -> Data in
            try plan.quantized(ranges: ranges, activationType: activations, weightBits: weightBits, channelMeans: means)
        }
        let float = try InferenceSession(model: try Model(contentsOf: modelURL), batchSize: 1, threads: threads)
        let layers = sensitivity || targetMse != nil ? try scanLayers(quantizer, float: float, inputs: scanInputs, quantize: quantize) : nil
        var plan = quantizer, mixed: MixedPrecision?
        if let targetMse, let layers {
            (plan, mixed) = try mixedPrecision(quantizer, ranking: layers, target: targetMse, float: float, inputs: scanInputs, quantize: quantize)
        }
        let quantized = try quantize(plan)
        let int8Model = try Model(serialized: quantized, name: URL(fileURLWithPath: output).lastPathComponent)
        let int8 = try InferenceSession(model: int8Model, batchSize: 1, threads: threads, integerLayers: .all)
        var agreement = AgreementCount(margin: decisiveMargin, hasDecision: !sidecar.foodClasses.isEmpty)
        if !heldOutFiles.isEmpty {
            skipped += eachPhoto(heldOutFiles, label: "checking", preparer) { data, file in
                let input = Tensor(shape: float.inputShape, data: data)
                let (reference, candidate) = (try float.run(input)[0].data, try int8.run(input)[0].data)
                agreement.add(file.lastPathComponent, reference: sidecar.classify(logits: reference, top: 5),
                              candidate: sidecar.classify(logits: candidate, top: 5), outputs: (reference, candidate))
            }
        }
        guard agreement.images > 0 || force else {
            throw UsageError(description: "none of the held-out photos could be read: agreement is unmeasured (--force writes the model anyway)")
        }
        var acceptance = Acceptance(agreement, margin: decisiveMargin, minAgreement: minAgreement)
        if let mixed, !mixed.met {
            acceptance.shortfalls.append(String(format: "--target-mse %.4f is not met even with every layer float (%.4f)", mixed.target, mixed.achieved))
        } else if let targetMse, agreement.images > 0, acceptance.meanSquaredLogitDifference.mean > targetMse {
            acceptance.shortfalls.append(String(format: "the held-out photos do not confirm --target-mse %.4f (%.4f)", targetMse,
                                                acceptance.meanSquaredLogitDifference.mean))
        }
        let accepted = acceptance.shortfalls.isEmpty || force
        if accepted { try write(quantized, sidecarOf: modelURL) }
        let report = Report(model: modelURL.path, output: output, written: accepted, method: method == .minmax ? "minmax" : "percentile \(percentile)",
                            activations: activations.rawValue, weightBits: weightBits, quantizedActivations: quantizer.activations.count,
                            keptFloat: keepFloat + (mixed?.layers.map(\.node) ?? []), mixedPrecision: mixed,
                            calibrationImages: calibrator.images, heldOutImages: agreement.images, skippedFiles: skipped,
                            acceptance: acceptance, top1Agreement: agreement.top1, meanTop5Overlap: agreement.top5,
                            disagreements: agreement.disagreements, speed: speedRuns > 0 ? try compareSpeed(float, try InferenceSession(model: int8Model, batchSize: 1, threads: threads,
                                                                                                          integerLayers: engine.integerLayers.choice)) : nil,
                            sensitivity: layers.map { Sensitivity(photos: scanInputs.count, baseline: $0.baseline, layers: $0.layers) })
        if json {
            print(try JSONOutput.encode(report))
        } else {
            print(String(format: "calibrated %d activations on %d photos (%@, %@)", report.quantizedActivations, report.calibrationImages,
                         report.method, report.activations))
            if !keepFloat.isEmpty { print("kept float: \(keepFloat.joined(separator: ", "))") }
            if agreement.images > 0 {
                func share(_ name: String, _ p: Proportion) -> String {
                    String(format: "%@ %d of %d (%.1f%%, 95%% interval %.1f-%.1f%%)", name, p.successes, p.trials, p.rate * 100, p.low * 100, p.high * 100)
                }
                let mse = acceptance.meanSquaredLogitDifference
                print("held out \(agreement.images) photos: " + [acceptance.decision.map { share("decision agrees on", $0) } ?? "no decision (the sidecar lists no food classes)",
                                                                 share(String(format: "top-1 agrees on the decisive (ahead by %.2f)", decisiveMargin), acceptance.decisiveTop1),
                                                                 String(format: "mean squared logit difference %.4f (%.4f-%.4f)", mse.mean, mse.low, mse.high)].joined(separator: "; "))
                print(String(format: "on every held-out photo: top-1 agreement %.1f%%, mean top-5 overlap %.1f%%", agreement.top1 ?? 0, agreement.top5 ?? 0))
            } else {
                print("no held-out photos checked: agreement unmeasured")
            }
            for case let miss in agreement.disagreements {
                let runnerUp = miss.floatRunnerUp.map { String(format: " (then %@ %.2f)", $0.label, $0.score) } ?? ""
                print(String(format: "top-1 differs on %@: float %@ %.2f%@, int8 %@ %.2f", miss.file, miss.float.label, miss.float.score,
                             runnerUp, miss.int8.label, miss.int8.score))
            }
            if let mixed = report.mixedPrecision {
                print(String(format: "mixed precision for --target-mse %.4f: %@ on the calibration photos (%.4f with every layer int8, %.2f ms per image here)",
                             mixed.target, mixed.met ? String(format: "met at %.4f", mixed.achieved) : String(format: "not met, %.4f with every layer float", mixed.achieved),
                             mixed.baseline, mixed.baselineMsPerImage))
                for layer in mixed.layers {
                    print(String(format: "  left float %@ (%@): %.4f, %.2f ms per image", layer.node, layer.opType, layer.meanSquaredOutputDifference, layer.msPerImage))
                }
            }
            if let sensitivity = report.sensitivity {
                print(String(format: "layer sensitivity on %d calibration photos: mean squared output difference %.4f as quantized; with one more layer left float:",
                             sensitivity.photos, sensitivity.baseline))
                for layer in sensitivity.layers.prefix(10) {
                    print(String(format: "  %.4f  %@ (%@)", layer.meanSquaredOutputDifference, layer.node, layer.opType))
                }
                if !sensitivity.layers.isEmpty {
                    print("to leave the first two float as well: --keep-float \((keepFloat + sensitivity.layers.prefix(2).map(\.node)).joined(separator: " "))")
                }
            }
            if let speed = report.speed {
                print(String(format: "speed on this host (%@ kernels, %d thread%@, batch 1, %d alternated runs each): int8 %.2f ms, float %.2f ms per image: %.2fx the float model's speed",
                             speed.kernels, speed.threads, speed.threads == 1 ? "" : "s", speed.runs, speed.int8MsPerImage, speed.floatMsPerImage,
                             speed.speedUp))
                print("the int8 model runs " + speed.integerLayers.summary + "; each host chooses again when it loads the model")
            }
            print(accepted ? "wrote \(output)" : "not written under --min-agreement \(minAgreement)%: " + acceptance.shortfalls.joined(separator: "; ")
                  + " (--force writes it anyway)")
        }
        if !accepted { throw ReportedFailure() }
    }

    /// The quantizer for the model, with --keep-float's nodes left float; a name the model lacks,
    /// or nothing left to quantize, is a usage error.
    private func planQuantization(_ modelURL: URL) throws -> StaticQuantizer {
        let quantizer: StaticQuantizer
        do {
            quantizer = try StaticQuantizer(contentsOf: modelURL, keepingFloat: Set(keepFloat))
        } catch {
            if error.kind == .unknownNode { throw UsageError(description: "--keep-float: \(error.message)") }
            throw error
        }
        guard !quantizer.activations.isEmpty else {
            throw UsageError(description: keepFloat.isEmpty ? "model \(quantizer.name) has no Conv, Gemm, MatMul, Add or pooling to quantize"
                                                            : "--keep-float leaves nothing of model \(quantizer.name) to quantize")
        }
        return quantizer
    }

    /// Measures each layer's share of the output error (LayerSensitivity) under a progress bar.
    private func scanLayers(_ quantizer: StaticQuantizer, float: InferenceSession, inputs: [[Float]],
                            quantize: @escaping (StaticQuantizer) throws(InferenceError) -> Data) throws -> LayerSensitivity {
        let progress = ProgressLine(total: quantizer.weightedLayers.count, label: "layers")
        defer { progress.finish() }
        return try LayerSensitivity(quantizer, float: float, inputs: inputs, quantize: quantize) { progress.advance(by: 1) }
    }

    /// Leaves float, in the ranking's order, one layer after another until the error on the
    /// calibration inputs is at most `target`; then times the int8 model after each, alternated.
    private func mixedPrecision(_ quantizer: StaticQuantizer, ranking: LayerSensitivity, target: Double, float: InferenceSession,
                                inputs: [[Float]], quantize: @escaping (StaticQuantizer) throws(InferenceError) -> Data)
        throws -> (StaticQuantizer, MixedPrecision) {
        let measure = try OutputError(float: float, inputs: inputs, quantize: quantize)
        var (plan, error, plans) = (quantizer, ranking.baseline, [quantizer])
        var chosen: [(node: String, opType: String, error: Double)] = []
        for layer in ranking.layers where error > target {
            plan = try plan.keepingFloat([layer.node])
            error = try measure(plan)
            chosen.append((layer.node, layer.opType, error))
            plans.append(plan)
        }
        let sessions = try plans.map { plan throws -> InferenceSession in
            try InferenceSession(model: try Model(serialized: try quantize(plan), name: plan.name), batchSize: 1, threads: float.threads,
                                 integerLayers: .all)
        }
        let times = InferenceSession.alternatedMilliseconds(sessions, rounds: 3, runs: 5)
        return (plan, MixedPrecision(target: target, baseline: ranking.baseline, achieved: error, met: error <= target, baselineMsPerImage: times[0],
                                     layers: zip(chosen, times.dropFirst()).map { .init(node: $0.node, opType: $0.opType,
                                                                                         meanSquaredOutputDifference: $0.error, msPerImage: $1) }))
    }

    /// Times both sessions in alternated rounds, so the host's noise falls on both alike, and
    /// compares their medians.
    private func compareSpeed(_ float: InferenceSession, _ int8: InferenceSession) throws -> Speed {
        let times = InferenceSession.alternatedMilliseconds([float, int8], rounds: min(5, speedRuns), runs: max(1, speedRuns / min(5, speedRuns)))
        let (floatMs, int8Ms) = (times[0], times[1])
        return Speed(kernels: int8.kernels.rawValue, integerLayers: int8.integerLayers, threads: int8.threads, runs: speedRuns, floatMsPerImage: floatMs,
                     int8MsPerImage: int8Ms, speedUp: floatMs / int8Ms)
    }

    /// Prepares each photo and hands it to `body`, under a progress bar; returns the photos that
    /// could not be read or run, each reported by name on standard error.
    private func eachPhoto(_ files: [URL], label: String, _ preparer: PhotoPreparer, _ body: ([Float], URL) throws -> Void) -> [String] {
        var skipped: [String] = []
        let progress = ProgressLine(total: files.count, label: label)
        for file in files {
            do {
                try body(try preparer.prepare(file), file)
            } catch {
                progress.interrupt()
                printError("kiroku quantize: skipping \(file.path): \(error)")
                skipped.append(file.path)
            }
            progress.advance(by: 1)
        }
        progress.finish()
        return skipped
    }

    /// Writes the model and a copy of the float model's sidecar beside it (the same preprocessing,
    /// labels and name, so jobs that ask for the model by name are served by either).
    private func write(_ model: Data, sidecarOf modelURL: URL) throws {
        let target = URL(fileURLWithPath: output)
        let sidecar = modelURL.deletingPathExtension().appendingPathExtension("json")
        try model.write(to: target, options: .atomic)
        try Data(contentsOf: sidecar).write(to: target.deletingPathExtension().appendingPathExtension("json"), options: .atomic)
    }
}

extension StaticQuantizer.ActivationType: ExpressibleByArgument {}

/// Photo files to model inputs, as the worker prepares them.
private struct PhotoPreparer {
    let preprocessor: ImagePreprocessor
    let decoder = JPEGDecoder(limits: .standard)

    init(sidecar: ModelSidecar) {
        preprocessor = ImagePreprocessor(sidecar: sidecar)
    }

    func prepare(_ file: URL) throws -> [Float] {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: file))
        } catch {
            throw ImageError(.corrupt, "cannot read the file: \(error.localizedDescription)")
        }
        var input = [Float](repeating: 0, count: preprocessor.floatsPerImage)
        try input.withUnsafeMutableBufferPointer { buffer throws(ImageError) in try preprocessor.prepare(bytes, decoder: decoder, into: buffer) }
        return input
    }
}

/// How often the int8 model's classifications agree with the float model's.
struct AgreementCount {
    /// The lead of the float model's top class over its runner-up that makes a photo decisive.
    let margin: Double
    /// False when the sidecar lists no food classes: no decision to compare.
    let hasDecision: Bool
    private(set) var images = 0
    private var sameTop1 = 0, sameDecision = 0, decisive = 0, decisiveSame = 0, overlap = 0
    private(set) var squaredDifferences: [Double] = []
    private(set) var disagreements: [Quantize.Disagreement] = []

    init(margin: Double, hasDecision: Bool) {
        (self.margin, self.hasDecision) = (margin, hasDecision)
    }

    mutating func add(_ name: String, reference: ModelSidecar.Classification, candidate: ModelSidecar.Classification,
                      outputs: (reference: [Float], candidate: [Float])) {
        images += 1
        squaredDifferences.append(Tensor.meanSquaredDifference(outputs.reference, outputs.candidate))
        if reference.food == candidate.food { sameDecision += 1 }
        guard let float = reference.top.first, let int8 = candidate.top.first else { return }  // no classes: nothing to compare
        let isDecisive = Double(float.score - (reference.top.dropFirst().first?.score ?? 0)) >= margin
        if isDecisive { decisive += 1 }
        if float.index != int8.index {
            disagreements.append(Quantize.Disagreement(file: name, float: float, floatRunnerUp: reference.top.dropFirst().first, int8: int8))
        } else {
            sameTop1 += 1
            if isDecisive { decisiveSame += 1 }
        }
        overlap += Set(reference.top.map(\.index)).intersection(candidate.top.map(\.index)).count
    }

    var decision: Proportion? { hasDecision ? Proportion(successes: sameDecision, of: images) : nil }
    var decisiveTop1: Proportion { Proportion(successes: decisiveSame, of: decisive) }
    var top1: Double? { images == 0 ? nil : 100 * Double(sameTop1) / Double(images) }
    var top5: Double? { images == 0 ? nil : 100 * Double(overlap) / Double(images * 5) }
}
