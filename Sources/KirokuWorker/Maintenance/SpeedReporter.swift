import KirokuQueue

/// Records the worker's measured speed (images per second while busy) in kiroku.workers, for
/// the advisor; nothing until a batch has been measured.
struct SpeedReporter: MaintenanceDuty {
    let link: DatabaseLink
    let speed: SpeedMeter
    let workerID: String
    let interval: Duration

    var name: String { "speed report" }

    func nextDelay() -> Duration { interval }

    @discardableResult
    func runOnce() async throws -> Int {
        guard let rate = speed.imagesPerSecond else { return 0 }
        let id = workerID
        try await link.run { queue throws(PostgresError) in try queue.reportWorkerSpeed(id: id, instanceType: nil, imagesPerSecond: rate) }
        return 1
    }
}
