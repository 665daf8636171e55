import Foundation
import KirokuRandom

/// Whether a session runs its 3x3 stride-1 convolutions between channel blocks by Winograd's
/// F(4x4, 3x3) (WinogradPlan), whose rounding differs from a direct convolution's.
public enum WinogradChoice: Sendable, Equatable {
    /// Where it leaves the outputs as they are: at load, the session with it and one without run
    /// one seeded input, and it is kept when no output moves by more than `tolerance` of that
    /// output's largest magnitude. A model that amplifies rounding (one whose outputs move by
    /// 1e-3 when its input moves by one rounding) keeps the direct kernels.
    case probed
    /// Wherever the shape suits it.
    case always
    /// Nowhere: direct kernels only.
    case never

    /// Outputs may move by this much of their largest magnitude.
    public static let tolerance: Float = 1e-4

    /// Whether the session whose compilation `planned` (with Winograd wherever it suits) runs it:
    /// for `.probed` with Winograd steps planned, the sessions `make` builds with and without it
    /// compared on a seeded input (Winograd kept only when their outputs agree).
    func enabled(planned: [StepDescription], make: (Bool) throws(InferenceError) -> InferenceSession) throws(InferenceError) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .probed:
            guard planned.contains(where: { $0.variant?.hasPrefix(WinogradPlan.label) == true }) else { return true }
            let (fast, direct) = (try make(true), try make(false))
            // Seeded (the same values on every host), spread as a normalised photo's: standard normal (Box and Muller).
            var generator = SplitMix64(seed: 20261127)
            let inputs = fast.inputShapes.map { shape in
                Tensor(shape: shape, data: (0..<(ShapeMath.count(shape) ?? 0)).map { _ in
                    let (u, v) = (1 - generator.unit(), generator.unit())
                    return Float((-2 * log(u)).squareRoot() * cos(2 * Double.pi * v))
                })
            }
            guard let ours = try? fast.run(inputs), let theirs = try? direct.run(inputs) else { return false }
            return zip(ours, theirs).allSatisfy { a, b in
                let scale = b.data.reduce(0) { $1.isFinite ? max($0, abs($1)) : $0 }
                // Values equal (infinities too) or both NaN agree; a NaN or infinity on one side only does not.
                return zip(a.data, b.data).allSatisfy { $0 == $1 || $0.isNaN && $1.isNaN || abs($0 - $1) <= Self.tolerance * scale }
            }
        }
    }
}
