import Synchronization

/// The worker's measured speed: images per second while busy (each batch from its first job
/// reaching inference to its results stored, so decoding, the queue and the writes are in it),
/// over the last batches. The advisor sizes fleets with it.
final class SpeedMeter: Sendable {
    private let window = 32
    private let batches = Mutex<[(images: Int, seconds: Double)]>([])

    /// Records one batch.
    func record(images: Int, seconds: Double) {
        guard images > 0, seconds > 0 else { return }
        let window = window
        batches.withLock { batches in
            batches.append((images, seconds))
            if batches.count > window { batches.removeFirst(batches.count - window) }
        }
    }

    /// Images per second over the recorded batches; nil before the first.
    var imagesPerSecond: Double? {
        batches.withLock { batches in
            let seconds = batches.reduce(0) { $0 + $1.seconds }
            return seconds > 0 ? Double(batches.reduce(0) { $0 + $1.images }) / seconds : nil
        }
    }
}
