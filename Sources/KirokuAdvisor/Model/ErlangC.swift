import Foundation

/// The M/M/c queue (Erlang C): `servers` hosts, each serving one image at a time in `serviceTime`
/// seconds on average, fed by Poisson arrivals at `arrivalRate` per second. The formulas the
/// advisor sizes a pool with for a waiting-time objective.
public struct ErlangC: Sendable, Equatable {
    /// Arrivals per second (λ).
    public let arrivalRate: Double
    /// Mean seconds one host takes per image (S).
    public let serviceTime: Double
    /// Hosts (c).
    public let servers: Int

    /// Creates the model.
    public init(arrivalRate: Double, serviceTime: Double, servers: Int) {
        self.arrivalRate = arrivalRate
        self.serviceTime = serviceTime
        self.servers = servers
    }

    /// Offered load in Erlangs: a = λ·S, the number of hosts the work keeps busy on average.
    public var offeredLoad: Double { arrivalRate * serviceTime }

    /// Mean utilisation of the hosts: a / c.
    public var utilisation: Double { offeredLoad / Double(servers) }

    /// True when the hosts can keep up (a < c); otherwise the queue grows without bound.
    public var isStable: Bool { offeredLoad < Double(servers) }

    /// The probability an arriving job has to wait, C(c, a); 1 when the pool cannot keep up.
    /// Computed through the Erlang B recursion, which stays finite for any c.
    public var probabilityOfWaiting: Double {
        let a = offeredLoad
        guard isStable else { return 1 }
        guard a > 0 else { return 0 }
        var erlangB = 1.0
        for k in 1...servers { erlangB = a * erlangB / (Double(k) + a * erlangB) }
        let c = Double(servers)
        return c * erlangB / (c - a * (1 - erlangB))
    }

    /// The mean wait in the queue, seconds: C(c, a)·S / (c − a); infinite when unstable.
    public var meanWait: Double {
        guard isStable else { return .infinity }
        return probabilityOfWaiting * serviceTime / (Double(servers) - offeredLoad)
    }

    /// The probability a job waits longer than `seconds`: C(c, a)·exp(−(c − a)·t / S).
    public func probabilityOfWaitingLonger(than seconds: Double) -> Double {
        guard isStable else { return 1 }
        return probabilityOfWaiting * exp(-(Double(servers) - offeredLoad) * seconds / serviceTime)
    }

    /// The fewest hosts (at least one more than the offered load needs) meeting `objective`.
    public static func servers(arrivalRate: Double, serviceTime: Double, meeting objective: WaitObjective) -> Int {
        var servers = max(1, Int((arrivalRate * serviceTime).rounded(.down)) + 1)
        while !objective.isMet(by: ErlangC(arrivalRate: arrivalRate, serviceTime: serviceTime, servers: servers)) {
            servers += 1
        }
        return servers
    }
}

/// A waiting-time objective: the mean queue wait at most `target`, or at most a fraction of jobs
/// waiting longer than `target`.
public struct WaitObjective: Sendable, Equatable, Codable {
    /// The wait in seconds.
    public var target: Double
    /// Nil: the mean wait is at most `target`. A fraction p: P(wait > target) ≤ 1 − p (p = 0.95
    /// means 95% of jobs wait at most `target`).
    public var percentile: Double?

    /// Creates an objective.
    public init(target: Double, percentile: Double? = nil) {
        self.target = target
        self.percentile = percentile
    }

    /// Whether a pool modelled by `queue` meets the objective.
    public func isMet(by queue: ErlangC) -> Bool {
        guard queue.isStable else { return false }
        if let percentile { return queue.probabilityOfWaitingLonger(than: target) <= 1 - percentile }
        return queue.meanWait <= target
    }

    /// The objective in words, for reports.
    public var description: String {
        let wait = target < 1 ? String(format: "%.0f ms", target * 1000) : String(format: "%.1f s", target)
        guard let percentile else { return "mean queue wait ≤ \(wait)" }
        return String(format: "%g%% of jobs wait ≤ %@", percentile * 100, wait)
    }
}
