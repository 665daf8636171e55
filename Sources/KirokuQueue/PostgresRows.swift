import Foundation

/// The rows a statement returned, decoded from PostgreSQL's binary format.
public struct PostgresRows: Sendable, Sequence {
    /// Column names, in order.
    public let columns: [String]
    /// Decoded rows.
    public let rows: [PostgresRow]

    public func makeIterator() -> IndexingIterator<[PostgresRow]> { rows.makeIterator() }

    /// The only row, or an error naming the query's purpose when there is not exactly one.
    public func single(_ what: String) throws(PostgresError) -> PostgresRow {
        guard rows.count == 1 else {
            throw PostgresError(.decoding, "\(what): expected one row, got \(rows.count)")
        }
        return rows[0]
    }
}

/// One result row; cells are read by column name or position with typed accessors.
public struct PostgresRow: Sendable {
    let columnIndex: [String: Int]
    /// The decoded cells, in column order.
    public let cells: [PostgresCell]

    /// The cell in the named column.
    public func cell(_ column: String) throws(PostgresError) -> PostgresCell {
        guard let index = columnIndex[column] else {
            throw PostgresError(.decoding, "the result has no column \"\(column)\"")
        }
        return cells[index]
    }

    /// True when the named column is NULL.
    public func isNull(_ column: String) throws(PostgresError) -> Bool {
        try cell(column) == .null
    }

    /// An integer column (int2, int4, int8).
    public func int(_ column: String) throws(PostgresError) -> Int64 {
        guard case .int(let value) = try cell(column) else { throw mismatch(column, "an integer") }
        return value
    }

    /// A nullable integer column.
    public func optionalInt(_ column: String) throws(PostgresError) -> Int64? {
        try isNull(column) ? nil : try int(column)
    }

    /// A floating-point column (float4, float8).
    public func double(_ column: String) throws(PostgresError) -> Double {
        switch try cell(column) {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: throw mismatch(column, "a number")
        }
    }

    /// A nullable floating-point column.
    public func optionalDouble(_ column: String) throws(PostgresError) -> Double? {
        try isNull(column) ? nil : try double(column)
    }

    /// A boolean column.
    public func bool(_ column: String) throws(PostgresError) -> Bool {
        guard case .bool(let value) = try cell(column) else { throw mismatch(column, "a boolean") }
        return value
    }

    /// A text, varchar, json or jsonb column.
    public func string(_ column: String) throws(PostgresError) -> String {
        guard case .text(let value) = try cell(column) else { throw mismatch(column, "text") }
        return value
    }

    /// A nullable text column.
    public func optionalString(_ column: String) throws(PostgresError) -> String? {
        try isNull(column) ? nil : try string(column)
    }

    /// A nullable bytea column.
    public func optionalBytes(_ column: String) throws(PostgresError) -> [UInt8]? {
        switch try cell(column) {
        case .null: return nil
        case .bytes(let value): return value
        default: throw mismatch(column, "bytea")
        }
    }

    /// A timestamptz column.
    public func date(_ column: String) throws(PostgresError) -> Date {
        guard case .timestamp(let value) = try cell(column) else { throw mismatch(column, "a timestamp") }
        return value
    }

    /// A nullable timestamptz column.
    public func optionalDate(_ column: String) throws(PostgresError) -> Date? {
        try isNull(column) ? nil : try date(column)
    }

    private func mismatch(_ column: String, _ expected: String) -> PostgresError {
        let found = (try? cell(column)).map { "\($0)" } ?? "nothing"
        return PostgresError(.decoding, "column \"\(column)\" is not \(expected): found \(found.prefix(80))")
    }
}
