/// Reading results: pages of finished jobs (`kiroku results`), and waiting for them: a producer
/// LISTENs on the results channel before it enqueues, then reads the jobs announced finished
/// (`kiroku enqueue --wait`).
extension JobQueue {
    /// The columns `finishedJobs` returns, as `kiroku results` prints them.
    public static let resultColumns = ["id", "state", "pool", "model", "image_uri", "attempt", "enqueued_at", "finished_at", "error_kind", "error", "result"]

    /// Subscribes to the results channel: call before enqueueing, so no finished job is missed.
    public func listenForResults() throws(PostgresError) {
        try connection.listen(Self.resultsChannel)
    }

    /// The ids announced finished within `timeout` (empty on timeout): every notification already
    /// received, or the first to arrive.
    public func waitForFinished(timeout: Duration) throws(PostgresError) -> [Int64] {
        var ids: [Int64] = []
        var wait = timeout
        while let notification = try connection.waitForNotification(timeout: wait) {
            if notification.channel == Self.resultsChannel {
                ids += notification.payload.split(separator: ",").compactMap { Int64($0) }
            }
            wait = .zero
        }
        return ids
    }

    /// The jobs among `ids` that have finished (succeeded, failed or cancelled), in id order, with `resultColumns`.
    public func finishedJobs(_ ids: [Int64]) throws(PostgresError) -> PostgresRows {
        try connection.query("""
            SELECT \(Self.resultColumns.joined(separator: ", ")) FROM kiroku.jobs
            WHERE id = ANY ($1::int8[]) AND state IN ('succeeded', 'failed', 'cancelled') ORDER BY id
            """, [.array(.int8, ids.map { .int($0) })])
    }

    /// Finished jobs (succeeded and failed) with `resultColumns`, in id order after `afterID`: at
    /// most `limit`, finished within `since` and of `pool` when given.
    public func finishedJobs(since: Duration?, pool: String?, afterID: Int64, limit: Int) throws(PostgresError) -> PostgresRows {
        try connection.query("""
            SELECT \(Self.resultColumns.joined(separator: ", ")) FROM kiroku.jobs
            WHERE state IN ('succeeded', 'failed')
              AND ($1::interval IS NULL OR finished_at >= now() - $1::interval)
              AND ($2::text IS NULL OR pool = $2)
              AND id > $3
            ORDER BY id
            LIMIT $4
            """, [since.map { .text(Self.interval($0)) } ?? .null, pool.map(PostgresBind.text) ?? .null, .int(afterID), .int(Int64(limit))])
    }
}
