import Foundation

/// Which build of the innermost loops (module KirokuKernels) a session runs: the AVX2 build
/// (256-bit vectors, fused multiply-add) on CPUs that have AVX2 and FMA, the portable one elsewhere.
public enum KernelSet: String, Sendable, CaseIterable {
    case portable
    case avx2

    /// The best build this CPU runs, unless the environment's KIROKU_KERNELS names another
    /// ("portable" to compare, or on a CPU whose features are misreported).
    public static let detected: KernelSet = choose(requested: ProcessInfo.processInfo.environment["KIROKU_KERNELS"],
                                                   supported: supported())

    /// The builds this CPU can run.
    public static func supported(cpuinfo: String? = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) -> [KernelSet] {
        guard let flags = cpuinfo?.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else { return [.portable] }
        let features = Set(flags.split(separator: " "))
        return features.contains("avx2") && features.contains("fma") ? [.portable, .avx2] : [.portable]
    }

    /// The requested build if this CPU runs it, else the last (best) supported one.
    public static func choose(requested: String?, supported: [KernelSet]) -> KernelSet {
        if let requested, let set = KernelSet(rawValue: requested), supported.contains(set) { return set }
        return supported.last ?? .portable
    }
}
