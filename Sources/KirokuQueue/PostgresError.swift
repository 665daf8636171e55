import CLibPQ

/// An error from PostgreSQL or from talking to it, with the server's SQLSTATE when it sent one.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Equatable {
        /// The connection could not be opened or was lost.
        case connection
        /// The server rejected a statement.
        case query
        /// A result had a shape or type the caller did not expect.
        case decoding
    }

    /// The broad kind of failure.
    public let kind: Kind
    /// The primary message.
    public let message: String
    /// The five-character SQLSTATE code, when the server sent one.
    public let sqlState: String?
    /// The server's DETAIL, if any.
    public let detail: String?
    /// The server's HINT, if any.
    public let hint: String?

    /// Creates an error.
    public init(_ kind: Kind, _ message: String, sqlState: String? = nil, detail: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
    }

    /// True when the error means the connection is unusable (reconnecting may help).
    public var isConnectionLoss: Bool {
        kind == .connection || sqlState?.hasPrefix("08") == true || sqlState == "57P01"
    }

    public var description: String {
        var text = message
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let detail { text += "\nDETAIL: \(detail)" }
        if let hint { text += "\nHINT: \(hint)" }
        return text
    }

    /// The error a failed result carries.
    static func from(result: OpaquePointer?, connection: OpaquePointer?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let result, let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let status = result.map(PQresultStatus)
        let primary = field("M") ?? connection.map(connectionErrorMessage) ?? "unknown error"
        let kind: Kind = (status == PGRES_FATAL_ERROR && field("C") != nil) ? .query : .connection
        return PostgresError(kind, primary, sqlState: field("C"), detail: field("D"), hint: field("H"))
    }
}

/// libpq's last error message for a connection, without the trailing newline.
func connectionErrorMessage(_ connection: OpaquePointer) -> String {
    guard let raw = PQerrorMessage(connection) else { return "unknown error" }
    let text = String(cString: raw).trimmingCharacters(in: .whitespacesAndNewlines)
    return text.isEmpty ? "unknown error" : text
}
