import Foundation

/// The autoscaler's audit trail, kiroku.recommendations.
extension JobQueue {
    /// Records one autoscaler round: per pool and type, the desired, recommended and published
    /// counts and the inputs (JSON).
    public func recordRecommendations(_ rows: [(pool: String, type: String, desired: Int, recommended: Int, stabilised: Int, inputs: String)])
        throws(PostgresError) {
        try connection.query("""
                INSERT INTO kiroku.recommendations (pool, instance_type, desired, recommended, stabilised, inputs)
                SELECT * FROM unnest($1::text[], $2::text[], $3::int4[], $4::int4[], $5::int4[], $6::jsonb[])
                """, [.array(.text, rows.map { .text($0.pool) }), .array(.text, rows.map { .text($0.type) }),
                  .array(.int4, rows.map { .int(Int64($0.desired)) }), .array(.int4, rows.map { .int(Int64($0.recommended)) }),
                  .array(.int4, rows.map { .int(Int64($0.stabilised)) }), .array(.jsonb, rows.map { .text($0.inputs) })])
    }

    /// The recommendations of the last `window` seconds, oldest first, keyed pool/instance type.
    public func recentRecommendations(within window: Double) throws(PostgresError) -> [(key: String, madeAt: Date, recommended: Int)] {
        try connection.query("""
            SELECT pool || '/' || instance_type AS key, made_at, recommended FROM kiroku.recommendations
            WHERE made_at >= now() - make_interval(secs => $1) ORDER BY made_at
            """, [.double(window)]).map { row throws(PostgresError) in
            (try row.string("key"), try row.date("made_at"), Int(try row.int("recommended")))
        }
    }
}
