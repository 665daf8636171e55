import Foundation

/// Scale out at once, scale in slowly: the published count is the current recommendation when it
/// is higher than the last one published, else the largest recommendation within the window
/// (so a dip has to last the whole window before hosts are removed).
public struct Stabiliser: Sendable {
    /// How long a lower recommendation must hold before it is published.
    public let window: TimeInterval
    private var history: [(at: Date, recommended: Int)] = []

    /// Creates a stabiliser, optionally seeded with earlier recommendations (oldest first).
    public init(window: TimeInterval, history: [(at: Date, recommended: Int)] = []) {
        self.window = window
        self.history = history
    }

    /// Records a recommendation made at `now` and returns the count to publish.
    public mutating func publish(_ recommended: Int, at now: Date) -> Int {
        history.append((now, recommended))
        history.removeAll { now.timeIntervalSince($0.at) > window }
        return history.map(\.recommended).max() ?? recommended
    }
}
