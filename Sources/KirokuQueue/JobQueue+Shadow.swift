/// Shadow sampling (a share of new jobs duplicated to the other pool) and the pairs it produced.
extension JobQueue {
    /// Duplicates `fraction` of new jobs in either pool to the other (0 stops it, keeping the pools).
    public func setShadow(fraction: Double, poolA: String, poolB: String) throws(PostgresError) {
        try connection.query("SELECT kiroku.set_shadow($1, $2, $3)", [.double(fraction), .text(poolA), .text(poolB)])
    }

    /// Stops duplicating new jobs; the pairs compared so far stay.
    public func stopShadow() throws(PostgresError) {
        try connection.query("SELECT kiroku.set_shadow(0, pool_a, pool_b) FROM kiroku.shadow")
    }

    /// The shadow sampling as configured (nil: never set).
    public func shadowSettings() throws(PostgresError) -> (fraction: Double, poolA: String, poolB: String)? {
        try connection.query("SELECT fraction, pool_a, pool_b FROM kiroku.shadow").rows.first.map { row throws(PostgresError) in
            (try row.double("fraction"), try row.string("pool_a"), try row.string("pool_b"))
        }
    }

    /// The shadow pairs both pools finished: how many, how many agree on top-1, the mean |top-1 score difference|.
    public func shadowSummary() throws(PostgresError) -> (compared: Int, agreeing: Int, scoreDifference: Double?) {
        let row = try connection.query("""
            SELECT count(*) AS compared,
                   count(*) FILTER (WHERE original_top1 = duplicate_top1) AS agreeing,
                   avg(abs(original_score - duplicate_score)) AS score_difference
            FROM kiroku.shadow_pairs
            """).single("shadow_pairs")
        return (Int(try row.int("compared")), Int(try row.int("agreeing")), try row.optionalDouble("score_difference"))
    }

    /// Mean seconds from claim to result per pool, over the shadow pairs.
    public func shadowSecondsByPool() throws(PostgresError) -> [String: Double] {
        var seconds: [String: Double] = [:]
        for row in try connection.query("""
            SELECT pool, avg(s) AS seconds FROM (
                SELECT original_pool AS pool, original_seconds AS s FROM kiroku.shadow_pairs
                UNION ALL SELECT duplicate_pool, duplicate_seconds FROM kiroku.shadow_pairs) AS t
            GROUP BY pool
            """) {
            seconds[try row.string("pool")] = try row.optionalDouble("seconds")
        }
        return seconds
    }
}
