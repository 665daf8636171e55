import Foundation

/// A statement parameter. Scalars other than bytea travel as text and take the type the
/// statement gives them; bytea and arrays travel in PostgreSQL's binary format.
public enum PostgresBind: Sendable {
    case null
    case text(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case bytea([UInt8])
    case timestamp(Date)
    /// An array of one element type (see `PostgresArrayElement`), NULL elements allowed.
    case array(PostgresArrayElement, [PostgresBind])

    /// The type OID sent for the parameter (0 lets the server infer it), its bytes and format.
    func encoded() -> (oid: UInt32, bytes: [UInt8]?, binary: Bool) {
        switch self {
        case .null: return (0, nil, false)
        case .text(let value): return (0, Array(value.utf8), false)
        case .int(let value): return (0, Array(String(value).utf8), false)
        case .double(let value): return (0, Array(String(value).utf8), false)
        case .bool(let value): return (0, Array((value ? "t" : "f").utf8), false)
        case .bytea(let value): return (PostgresType.bytea, value, true)
        case .timestamp(let value): return (PostgresType.timestamptz, PostgresBinary.timestamp(value), true)
        case .array(let element, let values): return (element.arrayOID, PostgresBinary.array(element, values), true)
        }
    }
}

/// The element types `PostgresBind.array` can carry.
public enum PostgresArrayElement: Sendable {
    case bytea, text, int4, int8, jsonb, timestamptz

    var oid: UInt32 {
        switch self {
        case .bytea: PostgresType.bytea
        case .text: PostgresType.text
        case .int4: PostgresType.int4
        case .int8: PostgresType.int8
        case .jsonb: PostgresType.jsonb
        case .timestamptz: PostgresType.timestamptz
        }
    }

    var arrayOID: UInt32 {
        switch self {
        case .bytea: 1001
        case .text: 1009
        case .int4: 1007
        case .int8: 1016
        case .jsonb: 3807
        case .timestamptz: 1185
        }
    }
}

/// Type OIDs from pg_type that Kiroku reads or writes.
enum PostgresType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let json: UInt32 = 114
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let timestamp: UInt32 = 1114
    static let timestamptz: UInt32 = 1184
    static let jsonb: UInt32 = 3802
    static let void: UInt32 = 2278
}

/// PostgreSQL's binary wire formats (network byte order).
enum PostgresBinary {
    /// Seconds from the Unix epoch to PostgreSQL's epoch, 2000-01-01 00:00:00 UTC.
    static let epochOffset: TimeInterval = 946_684_800

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian, Array.init)
    }

    static func timestamp(_ date: Date) -> [UInt8] {
        let micros = ((date.timeIntervalSince1970 - epochOffset) * 1_000_000).rounded()
        return bigEndian(Int64(micros))
    }

    /// A one-dimensional array: ndim, has-null flag, element OID, length, lower bound, elements.
    static func array(_ element: PostgresArrayElement, _ values: [PostgresBind]) -> [UInt8] {
        let hasNull = values.contains { if case .null = $0 { true } else { false } }
        var bytes = bigEndian(Int32(1)) + bigEndian(Int32(hasNull ? 1 : 0)) + bigEndian(element.oid)
        bytes += bigEndian(Int32(values.count)) + bigEndian(Int32(1))
        for value in values {
            guard let body = elementBytes(element, value) else {
                bytes += bigEndian(Int32(-1))
                continue
            }
            bytes += bigEndian(Int32(body.count))
            bytes += body
        }
        return bytes
    }

    private static func elementBytes(_ element: PostgresArrayElement, _ value: PostgresBind) -> [UInt8]? {
        switch (element, value) {
        case (_, .null): return nil
        case (.bytea, .bytea(let bytes)): return bytes
        case (.text, .text(let text)): return Array(text.utf8)
        case (.jsonb, .text(let json)): return [1] + Array(json.utf8)
        case (.int4, .int(let number)): return bigEndian(Int32(truncatingIfNeeded: number))
        case (.int8, .int(let number)): return bigEndian(number)
        case (.timestamptz, .timestamp(let date)): return timestamp(date)
        default: preconditionFailure("array element \(value) does not match element type \(element)")
        }
    }
}

/// One decoded column value of a result row.
public enum PostgresCell: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case text(String)
    case bytes([UInt8])
    case timestamp(Date)

    /// Decodes a binary-format value of the given type OID.
    static func decode(oid: UInt32, bytes: UnsafeRawBufferPointer) throws(PostgresError) -> PostgresCell {
        func integer<T: FixedWidthInteger>(_: T.Type) throws(PostgresError) -> T {
            guard bytes.count == MemoryLayout<T>.size else {
                throw PostgresError(.decoding, "a \(T.self) value of \(bytes.count) bytes")
            }
            return T(bigEndian: bytes.loadUnaligned(as: T.self))
        }
        switch oid {
        case PostgresType.void: return .null
        case PostgresType.bool: return .bool(bytes.first == 1)
        case PostgresType.int2: return .int(Int64(try integer(Int16.self)))
        case PostgresType.int4: return .int(Int64(try integer(Int32.self)))
        case PostgresType.oid: return .int(Int64(try integer(UInt32.self)))
        case PostgresType.int8: return .int(try integer(Int64.self))
        case PostgresType.float4: return .double(Double(Float(bitPattern: try integer(UInt32.self))))
        case PostgresType.float8: return .double(Double(bitPattern: try integer(UInt64.self)))
        case PostgresType.bytea: return .bytes(Array(bytes))
        case PostgresType.timestamptz, PostgresType.timestamp:
            let micros = try integer(Int64.self)
            return .timestamp(Date(timeIntervalSince1970: PostgresBinary.epochOffset + Double(micros) / 1_000_000))
        case PostgresType.jsonb:
            // Version byte 1, then the JSON text.
            guard bytes.first == 1 else { throw PostgresError(.decoding, "unknown jsonb format version") }
            return .text(String(decoding: bytes.dropFirst(), as: UTF8.self))
        case PostgresType.text, PostgresType.varchar, PostgresType.bpchar, PostgresType.name, PostgresType.json:
            return .text(String(decoding: bytes, as: UTF8.self))
        default:
            throw PostgresError(.decoding, "unsupported result type OID \(oid): cast the column to text in the query")
        }
    }
}
