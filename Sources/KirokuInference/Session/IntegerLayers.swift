/// Which quantized layers of an int8 (QDQ) model run on integer kernels. Either way a layer
/// computes the QDQ model's arithmetic: on integer kernels with its levels, or on float kernels
/// with its dequantized weights; which is faster depends on the CPU.
public enum IntegerLayerChoice: Sendable, Equatable {
    /// Each integer layer timed against its float twin on this CPU at load, a few runs: the
    /// faster of all-integer, all-float and the per-layer choice runs.
    case measured
    /// Every layer the model quantizes on integer kernels.
    case all
    /// Every layer on float kernels.
    case none
    /// These layers (ONNX node names of Conv, Gemm, MatMul or Add) on float kernels, the rest integer.
    case floatLayers(Set<String>)
}

/// How much of a session runs on integer kernels, and how that was chosen.
public struct IntegerLayers: Sendable, Equatable, Codable {
    /// The timings behind a measured choice: milliseconds per run of each plan tried on this CPU.
    public struct Timing: Sendable, Equatable, Codable {
        /// Every quantized layer on integer kernels, every one on float kernels, and the per-layer choice (nil when it was one of the two).
        public var allInteger: Double, allFloat: Double, perLayer: Double?
        /// Milliseconds the measurement took at load.
        public var measuredFor: Double
    }

    /// The layers on integer kernels, and how many the session could run there.
    public var integer: Int, quantized: Int
    /// The share of the session's multiply-adds on integer kernels.
    public var multiplyAddShare: Double
    /// The quantized layers left on float kernels.
    public var floatLayers: [String]
    /// "measured", "all", "none" or "given".
    public var chosenBy: String
    /// The timings, when measured.
    public var timing: Timing?

    /// In words: "41 of 60 quantized layers on integer kernels (72% of multiply-adds), measured
    /// on this CPU: all integer 11.0 ms, all float 12.1 ms, per layer 10.8 ms".
    public var summary: String {
        var text = "\(integer) of \(quantized) quantized layers on integer kernels (\(Int((multiplyAddShare * 100).rounded()))% of multiply-adds)"
        if let timing {
            text += ", " + (["measured on this CPU: all integer " + Self.ms(timing.allInteger), "all float " + Self.ms(timing.allFloat)]
                            + (timing.perLayer.map { ["per layer " + Self.ms($0)] } ?? [])).joined(separator: ", ")
        } else {
            text += ", as told (\(chosenBy))"
        }
        return text
    }

    private static func ms(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    /// The precision a result reports: "int8" when every quantized layer runs on integer kernels,
    /// "mixed" when some do, "float32" when none does.
    public var precision: String {
        integer == 0 ? "float32" : integer == quantized ? "int8" : "mixed"
    }
}

extension IntegerLayerChoice {
    /// The layers to leave float: for `.measured`, timed on sessions of `model` built by `make`
    /// (which takes a fixed choice), bounded to about a second on a model of Lite0's size (four
    /// times that where the plans come within 10% of all float and are timed again).
    func floatLayers(model: Model, make: (IntegerLayerChoice) throws(InferenceError) -> InferenceSession)
        throws(InferenceError) -> (floatLayers: Set<String>, chosenBy: String, timing: IntegerLayers.Timing?) {
        switch self {
        case .all: return ([], "all", nil)
        case .floatLayers(let names): return (names, "given", nil)
        case .none, .measured:
            guard model.precision == .int8QDQ else { return ([], self == .none ? "none" : "all", nil) }
            let integer = try make(.all)
            let layers = integer.integerLayerNames
            guard self == .measured else { return (Set(layers), "none", nil) }
            guard !layers.isEmpty else { return ([], "measured", nil) }
            let started = ContinuousClock.now
            let float = try make(.none)
            // Runs per plan and round: about 0.1 s of the slower plan's first run, 1 to 4.
            let first = max(float.timedRun(), integer.timedRun())
            let runs = max(1, min(4, Int(100 / max(first, 0.01))))
            let (integerSteps, floatSteps) = (integer.layerMilliseconds(runs: runs), float.layerMilliseconds(runs: runs))
            let slower = Set(layers.filter { name in floatSteps[name].map { $0 < integerSteps[name] ?? 0 } ?? false })
            var plans: [(Set<String>, InferenceSession)] = [([], integer), (Set(layers), float)]
            if !slower.isEmpty && slower.count < layers.count { plans.append((slower, try make(.floatLayers(slower)))) }
            var times = InferenceSession.alternatedMilliseconds(plans.map(\.1), rounds: 3, runs: runs)
            // A close call (the faster plan with integer layers within 10% of all float) is timed
            // again over 9 rounds: on 3, GhostNet's choice moved from run to run between 0 and 68
            // of 112 layers integer.
            if abs(min(times[0], times.count > 2 ? times[2] : times[0]) / times[1] - 1) < 0.1 {
                times = InferenceSession.alternatedMilliseconds(plans.map(\.1), rounds: 9, runs: runs)
            }
            let best = Self.fastest(times)
            let timing = IntegerLayers.Timing(allInteger: times[0], allFloat: times[1], perLayer: plans.count > 2 ? times[2] : nil,
                                              measuredFor: InferenceSession.milliseconds(since: started))
            return (plans[best].0, "measured", timing)
        }
    }

    /// Of the plans' times (all integer, all float, and the per-layer mix if tried), the plan to
    /// run: all float unless one with integer layers beats it by more than 3% (a tie goes to
    /// float: an int8 model is not to run slower than its float one); the mix only where it beats
    /// the faster whole plan by more than 5% too (a few runs time it, and the conversions between
    /// its float and integer layers moved it: GoogLeNet chose 54 of 58 layers integer at 7.8 ms
    /// against 8.0 all integer, then ran 8.8 against 7.6).
    static func fastest(_ times: [Double]) -> Int {
        var best = times[0] < 0.97 * times[1] ? 0 : 1
        if times.count > 2, times[2] < 0.95 * min(times[0], times[1]) { best = 2 }
        return best
    }

}
