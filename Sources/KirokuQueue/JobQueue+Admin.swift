/// Administration: requeueing, pruning, and reading one job whole.
extension JobQueue {
    /// Requeues every failed job (of `pool`, when given); returns how many were requeued of how many failed.
    public func requeueFailed(pool: String?) throws(PostgresError) -> (requeued: Int, failed: Int) {
        let row = try connection.query("""
            SELECT count(*) FILTER (WHERE kiroku.requeue(f.id)) AS requeued, count(*) AS failed
            FROM (SELECT id FROM kiroku.jobs WHERE state = 'failed' AND ($1::text IS NULL OR pool = $1) ORDER BY id) AS f
            """, [pool.map(PostgresBind.text) ?? .null]).single("requeue")
        return (Int(try row.int("requeued")), Int(try row.int("failed")))
    }

    /// Why `requeue(jobID:)` refused a job: its state, and the unfinished job that holds its
    /// idempotency key if one does; nil when the job does not exist.
    public func requeueObstacle(jobID: Int64) throws(PostgresError) -> (state: String, key: String?, holder: Int64?)? {
        let rows = try connection.query("""
            SELECT j.state, j.idempotency_key,
                   (SELECT o.id FROM kiroku.jobs AS o
                    WHERE o.idempotency_key = j.idempotency_key AND o.state IN ('queued', 'scheduled', 'running') AND o.id <> j.id) AS holder
            FROM kiroku.jobs AS j WHERE j.id = $1
            """, [.int(jobID)])
        guard let row = rows.rows.first else { return nil }
        return (try row.string("state"), try row.optionalString("idempotency_key"), try row.optionalInt("holder"))
    }

    /// Deletes up to `maxRows` jobs finished longer ago than `olderThan` (one batch); returns how many.
    public func prune(olderThan: Duration, maxRows: Int) throws(PostgresError) -> Int {
        Int(try connection.query("SELECT kiroku.prune($1::interval, $2) AS deleted",
                                 [.text(Self.interval(olderThan)), .int(Int64(maxRows))]).single("prune").int("deleted"))
    }

    /// Every column of one job, its image's size instead of its bytes (nil: no such job).
    public func jobDetails(_ id: Int64) throws(PostgresError) -> (columns: [String], row: PostgresRow)? {
        let rows = try connection.query("""
            SELECT j.id, j.state, j.pool, j.model, j.priority, j.attempt, j.max_attempts,
                   j.image_uri, length(i.image)::int8 AS image_bytes, encode(j.content_hash, 'hex') AS content_hash,
                   j.idempotency_key, j.run_after, j.enqueued_at, j.started_at, j.finished_at,
                   j.worker_id, j.lease_expires_at, j.error, j.error_kind, j.timings, j.result
            FROM kiroku.jobs AS j LEFT JOIN kiroku.job_images AS i ON i.job_id = j.id
            WHERE j.id = $1
            """, [.int(id)])
        return rows.rows.first.map { (rows.columns, $0) }
    }
}
