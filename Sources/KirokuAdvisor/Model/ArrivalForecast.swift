import Foundation

/// An arrival rate expected every day in a window of UTC time, e.g. a nightly bulk re-import.
/// A queue-driven rule sees a step in arrivals only once it has happened, and new hosts help only a
/// start-up lag later; a forecast lets the advisor have the hosts running when the window opens.
public struct ArrivalForecast: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Seconds after midnight UTC when the window opens and closes (a window may wrap past midnight).
    public var start: Int, end: Int
    /// The expected arrivals per second in the window.
    public var arrivalRate: Double

    static let day = 86_400

    /// Creates a forecast for [start, end) seconds after midnight UTC.
    public init(start: Int, end: Int, arrivalRate: Double) {
        self.start = start
        self.end = end
        self.arrivalRate = arrivalRate
    }

    /// Parses `HH:MM-HH:MM=RATE` (UTC, RATE in jobs per second), e.g. `01:00-01:15=24`.
    public init?(_ text: String) {
        let parts = text.split(separator: "=", maxSplits: 1)
        let times = parts.first?.split(separator: "-") ?? []
        guard parts.count == 2, times.count == 2, let start = Self.secondsOfDay(times[0]), let end = Self.secondsOfDay(times[1]),
              start != end, let rate = Double(parts[1]), rate.isFinite, rate > 0 else { return nil }
        self.init(start: start, end: end, arrivalRate: rate)
    }

    private static func secondsOfDay(_ text: Substring) -> Int? {
        let fields = text.split(separator: ":")
        guard fields.count == 2, fields[0].count == 2, fields[1].count == 2, let hours = Int(fields[0]), let minutes = Int(fields[1]),
              (0..<24).contains(hours), (0..<60).contains(minutes) else { return nil }
        return hours * 3600 + minutes * 60
    }

    /// Whether the window is open at `time`, or opens within `lead` seconds of it.
    public func isActive(at time: Date, lead: Double) -> Bool {
        let lead = Int(max(lead, 0).rounded(.up))
        let sinceOpening = (Int(time.timeIntervalSince1970.rounded(.down)) - (start - lead)).modulo(Self.day)
        return sinceOpening < min(lead + (end - start).modulo(Self.day), Self.day)
    }

    /// E.g. "24/s from 01:00 to 01:15 UTC".
    public var description: String {
        func clock(_ seconds: Int) -> String { String(format: "%02d:%02d", seconds / 3600, seconds % 3600 / 60) }
        return String(format: "%g/s from %@ to %@ UTC", arrivalRate, clock(start), clock(end))
    }
}

extension Int {
    /// The non-negative remainder.
    fileprivate func modulo(_ divisor: Int) -> Int { ((self % divisor) + divisor) % divisor }
}
