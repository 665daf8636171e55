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

    /// The shadow pairs both pools finished, in counts (kiroku.shadow_summary()).
    public func shadowSummary() throws(PostgresError) -> ShadowSummary {
        let row = try connection.query("SELECT * FROM kiroku.shadow_summary()").single("shadow_summary")
        return ShadowSummary(compared: Int(try row.int("compared")), agreeing: Int(try row.int("agreeing")),
                             decisions: Int(try row.int("decisions")), decisionsAgreeing: Int(try row.int("decisions_agreeing")),
                             scoreDifference: try row.optionalDouble("score_difference"))
    }

    /// Per pool over the shadow pairs: its results, mean seconds from claim to result, and the
    /// decode modes its results name ("unknown" for a service that does not say).
    public func shadowPools() throws(PostgresError) -> [ShadowPool] {
        try connection.query("""
            SELECT pool, results, mean_seconds, array_to_string(decode_modes, ',') AS modes FROM kiroku.shadow_pools()
            """).map { row throws(PostgresError) in
            ShadowPool(pool: try row.string("pool"), results: Int(try row.int("results")), meanSeconds: try row.optionalDouble("mean_seconds"),
                       decodeModes: try row.string("modes").split(separator: ",").map(String.init))
        }
    }
}

/// The shadow pairs in counts: top-1 agreement, and agreement on the product's decision (the food
/// verdict) over the pairs whose results both carry one.
public struct ShadowSummary: Sendable, Equatable {
    /// Pairs both pools finished, and those whose top-1 labels agree.
    public var compared: Int, agreeing: Int
    /// Pairs whose results both carry a decision, and those whose decisions agree.
    public var decisions: Int, decisionsAgreeing: Int
    /// Mean |top-1 score difference| (nil without pairs).
    public var scoreDifference: Double?

    /// Counts as read, or as a test states them.
    public init(compared: Int, agreeing: Int, decisions: Int, decisionsAgreeing: Int, scoreDifference: Double?) {
        (self.compared, self.agreeing, self.decisions, self.decisionsAgreeing) = (compared, agreeing, decisions, decisionsAgreeing)
        self.scoreDifference = scoreDifference
    }
}

/// One pool's side of the shadow pairs.
public struct ShadowPool: Sendable, Equatable, Codable {
    /// The pool.
    public var pool: String
    /// Its results among the pairs.
    public var results: Int
    /// Mean seconds from claim to result.
    public var meanSeconds: Double?
    /// The decode modes its results name (`reduced`, `full`, or `unknown`).
    public var decodeModes: [String]
}
