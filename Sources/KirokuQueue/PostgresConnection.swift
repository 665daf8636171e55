import CLibPQ
import Foundation
import Logging

/// A connection to PostgreSQL through libpq: parameterised statements with binary results,
/// multi-statement scripts, LISTEN/NOTIFY. Blocking, and not shared between threads: give each
/// thread or task its own connection.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// The connection string with any password masked, for messages and logs.
    public let redactedTarget: String
    private let logger: Logger

    /// Opens a connection. `connectionString` is a postgresql:// URL or libpq key=value string;
    /// empty means libpq's defaults (PGHOST, PGPORT, ...).
    public init(_ connectionString: String, logger: Logger = Logger(label: "kiroku.postgres")) throws(PostgresError) {
        try ConnectionString.validate(connectionString)
        self.logger = logger
        redactedTarget = connectionString.isEmpty ? "libpq defaults (PGHOST, PGPORT, ...)" : ConnectionString.redacted(connectionString)
        // A clear application name in pg_stat_activity, and a connect timeout unless one is given.
        var keys = ["dbname", "fallback_application_name"]
        var values = [connectionString, "kiroku"]
        if !connectionString.contains("connect_timeout") {
            keys.append("connect_timeout")
            values.append("10")
        }
        let handle = keys.withCStringArray { keyPointers in
            values.withCStringArray { valuePointers in PQconnectdbParams(keyPointers, valuePointers, 1) }
        }
        guard let handle else { throw PostgresError(.connection, "out of memory opening a connection") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = connectionErrorMessage(handle)
            PQfinish(handle)
            throw PostgresError(.connection, "cannot connect to PostgreSQL at \(redactedTarget): \(message)")
        }
        self.handle = handle
        // Server notices ("... already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// True while the connection is usable.
    public var isOpen: Bool {
        PQstatus(handle) == CONNECTION_OK
    }

    private func live() throws(PostgresError) -> OpaquePointer {
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(.connection, "the connection to \(redactedTarget) is closed")
        }
        return handle
    }

    /// Runs one statement with parameters ($1, $2, ...) and returns its rows, decoded from binary.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresBind] = []) throws(PostgresError) -> PostgresRows {
        let handle = try live()
        let encoded = parameters.map { $0.encoded() }
        let types = encoded.map { $0.oid }
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        let formats = encoded.map { Int32($0.binary ? 1 : 0) }
        // Copy parameter bytes into buffers that live until the call returns.
        let buffers: [UnsafeMutablePointer<CChar>?] = encoded.map { parameter in
            guard let bytes = parameter.bytes else { return nil }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1) + 1)
            bytes.withUnsafeBytes { raw in
                UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress ?? UnsafeRawPointer(buffer), byteCount: bytes.count)
            }
            buffer[bytes.count] = 0
            return buffer
        }
        defer { buffers.forEach { $0?.deallocate() } }
        let result = buffers.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
            PQexecParams(handle, sql, Int32(parameters.count), types, values.baseAddress, lengths, formats, 1)
        }
        defer { PQclear(result) }
        return try rows(of: result, handle: handle)
    }

    /// Runs a script of one or more statements (simple query protocol, no parameters).
    public func execute(_ script: String) throws(PostgresError) {
        let handle = try live()
        let result = PQexec(handle, script)
        defer { PQclear(result) }
        _ = try rows(of: result, handle: handle)
    }

    /// Runs `body` inside BEGIN ... COMMIT, rolling back if it throws.
    public func transaction<T>(_ body: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isOpen { try? execute("ROLLBACK") }
            throw error
        }
    }

    private func rows(of result: OpaquePointer?, handle: OpaquePointer) throws(PostgresError) -> PostgresRows {
        guard let result else {
            throw PostgresError(.connection, "lost the connection to \(redactedTarget): \(connectionErrorMessage(handle))")
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(columns: [], rows: [])
        case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
            break
        default:
            var error = PostgresError.from(result: result, connection: handle)
            if PQstatus(handle) != CONNECTION_OK {
                error = PostgresError(.connection, "lost the connection to \(redactedTarget): \(error.message)", sqlState: error.sqlState)
            }
            logger.debug("statement failed", metadata: ["sqlstate": "\(error.sqlState ?? "-")", "error": "\(error.message)"])
            throw error
        }
        let columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        let types = (0..<columnCount).map { UInt32(PQftype(result, Int32($0))) }
        let columnIndex = Dictionary(columns.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        var rows: [PostgresRow] = []
        let rowCount = Int(PQntuples(result))
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            var cells: [PostgresCell] = []
            cells.reserveCapacity(columnCount)
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) == 1 {
                    cells.append(.null)
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, row, column), count: length)
                cells.append(try PostgresCell.decode(oid: types[Int(column)], bytes: bytes))
            }
            rows.append(PostgresRow(columnIndex: columnIndex, cells: cells))
        }
        return PostgresRows(columns: columns, rows: rows)
    }

    // MARK: LISTEN / NOTIFY

    /// Subscribes this connection to a notification channel.
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(Self.quoteIdentifier(channel))")
    }

    /// Waits on the connection's socket (no polling) until a notification arrives or `timeout`
    /// passes; returns the notification, or nil on timeout.
    public func waitForNotification(timeout: Duration) throws(PostgresError) -> PostgresNotification? {
        let handle = try live()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(.connection, "lost the connection to \(redactedTarget): \(connectionErrorMessage(handle))")
            }
            if let notification = PQnotifies(handle) {
                defer { PQfreemem(notification) }
                return PostgresNotification(
                    channel: String(cString: notification.pointee.relname),
                    payload: String(cString: notification.pointee.extra),
                    senderPID: notification.pointee.be_pid
                )
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero { return nil }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, milliseconds) < 0 && errno != EINTR {
                throw PostgresError(.connection, "waiting on the connection to \(redactedTarget) failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// A double-quoted SQL identifier.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A notification received on a LISTENing connection.
public struct PostgresNotification: Sendable, Equatable {
    /// The channel it was sent on.
    public let channel: String
    /// The payload (may be empty).
    public let payload: String
    /// The server process id of the sender.
    public let senderPID: Int32
}

extension Array where Element == String {
    /// Calls `body` with a NULL-terminated array of C strings.
    func withCStringArray<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
