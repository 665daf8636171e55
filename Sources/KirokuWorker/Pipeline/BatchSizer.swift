import Synchronization

/// How many jobs to claim next: about `target` worth of work at the measured time per image,
/// between 1 and `maximum`. A claim never waits for a batch to fill (it takes what is runnable
/// now), so a single job is never held back; the size only bounds how much one host takes at a
/// time, so a slow model or a slow host leaves work for the others.
final class BatchSizer: Sendable {
    private let target: Double
    private let maximum: Int
    /// Exponentially smoothed seconds per image (decode + inference).
    private let perImage: Mutex<Double>

    /// Starts from a first estimate of the time per image (the warm-up inference).
    init(target: Duration, maximum: Int, initialEstimate: Duration) {
        self.target = target.seconds
        self.maximum = maximum
        perImage = Mutex(max(initialEstimate.seconds, 1e-4))
    }

    /// Feeds one measured image time into the estimate.
    func record(_ seconds: Double) {
        perImage.withLock { $0 = 0.8 * $0 + 0.2 * max(seconds, 1e-4) }
    }

    /// The size of the next claim.
    var next: Int {
        let estimate = perImage.withLock { $0 }
        return min(maximum, max(1, Int((target / estimate).rounded())))
    }
}
