import Foundation

/// How many CPUs this process may actually use: the smaller of its affinity mask and its cgroup
/// CPU quota (a container limited to 2 CPUs on a 16-core host gets 2), never the host's count.
public enum CPUBudget {
    /// The CPUs available to this process, at least 1.
    public static func available() -> Int {
        max(1, min(affinityCount() ?? ProcessInfo.processInfo.activeProcessorCount, cgroupQuota() ?? .max))
    }

    /// CPUs in this process's affinity mask (Cpus_allowed in /proc/self/status).
    static func affinityCount(status: String? = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) -> Int? {
        guard let line = status?.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") }) else { return nil }
        let mask = line.dropFirst("Cpus_allowed:".count).filter { $0.isHexDigit }
        let count = mask.reduce(0) { $0 + (Int(String($1), radix: 16) ?? 0).nonzeroBitCount }
        return count > 0 ? count : nil
    }

    /// The cgroup CPU quota rounded up (cgroup v2 cpu.max, or v1 cfs_quota_us / cfs_period_us).
    static func cgroupQuota(root: String = "/sys/fs/cgroup") -> Int? {
        if let text = try? String(contentsOfFile: root + "/cpu.max", encoding: .utf8) {
            return quota(v2: text)
        }
        guard let quota = (try? String(contentsOfFile: root + "/cpu/cpu.cfs_quota_us", encoding: .utf8)).flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
              let period = (try? String(contentsOfFile: root + "/cpu/cpu.cfs_period_us", encoding: .utf8)).flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
              quota > 0, period > 0 else { return nil }
        return (quota + period - 1) / period
    }

    /// Parses cgroup v2's cpu.max ("max 100000" or "QUOTA PERIOD").
    static func quota(v2 text: String) -> Int? {
        let fields = text.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]), quota > 0, period > 0 else { return nil }
        return (quota + period - 1) / period
    }
}
