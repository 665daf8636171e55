import Foundation

/// Jobs already enqueued to come due later (their run_after lies ahead): arrivals known before
/// they happen. A nightly re-import enqueued in the evening for 01:00 is tomorrow's load, and the
/// advisor sizes for it a start-up lag ahead, as it does for an `--expect` window, with no flag.
public struct ScheduledArrivals: Sendable, Equatable, Codable {
    /// Jobs coming due in each minute from the observation on (index 0: the next 60 seconds;
    /// jobs already due but not yet promoted count there too).
    public var perMinute: [Int]
    /// Arrivals per second of the jobs that were due when enqueued: the load the scheduled jobs
    /// come on top of (the measured rate also counts scheduled jobs that have come due).
    public var unscheduledArrivalRate: Double

    /// Creates the counts.
    public init(perMinute: [Int], unscheduledArrivalRate: Double) {
        self.perMinute = perMinute
        self.unscheduledArrivalRate = unscheduledArrivalRate
    }

    /// Jobs scheduled within the counted horizon.
    public var total: Int { perMinute.reduce(0, +) }

    /// The busiest minute among those that open within `lead` seconds: (its index, its jobs), or
    /// nil when none of them has a job.
    public func peak(within lead: Double) -> (minute: Int, jobs: Int)? {
        guard let best = minutes(within: lead).enumerated().max(by: { $0.element < $1.element }), best.element > 0 else { return nil }
        return (best.offset, best.element)
    }

    /// Jobs coming due in the minutes that open within `seconds`.
    public func jobs(within seconds: Double) -> Int {
        minutes(within: seconds).reduce(0, +)
    }

    /// The counts of the minutes that open within `seconds` (the current minute included).
    private func minutes(within seconds: Double) -> ArraySlice<Int> {
        perMinute.prefix(Int((max(seconds, 0) / 60).rounded(.down)) + 1)
    }

    /// The minutes with jobs, grouped into windows of consecutive minutes, for reports: e.g.
    /// "in 58-73 min: 18,000 jobs (peak 20/s)".
    public var windows: [String] {
        var result: [String] = []
        var index = 0
        while index < perMinute.count {
            guard perMinute[index] > 0 else { index += 1; continue }
            let start = index
            while index < perMinute.count && perMinute[index] > 0 { index += 1 }
            let span = perMinute[start..<index]
            result.append(String(format: "in %d-%d min: %d jobs (peak %.3g/s)", start, index, span.reduce(0, +),
                                  Double(span.max() ?? 0) / 60))
        }
        return result
    }
}
