import Foundation
import KirokuQueue
import KirokuSupport
import KirokuTestSupport
import Testing

@Suite("Values and helpers")
struct ValueTests {
    @Test("SHA-256 matches the FIPS 180-4 examples and PostgreSQL's sha256()")
    func sha256() throws {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let connection = try PostgresConnection(try TestDatabase.adminURL())
        for length in [1, 55, 56, 63, 64, 65, 1000, 100_003] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let theirs = try connection.query("SELECT encode(sha256($1), 'hex') AS h", [.bytea(bytes)]).single("sha").string("h")
            #expect(SHA256.hex(bytes) == theirs, "length \(length)")
        }
    }

    @Test("values round-trip through PostgreSQL's binary format")
    func roundTrip() throws {
        let connection = try PostgresConnection(try TestDatabase.adminURL())
        let date = Date(timeIntervalSince1970: 1_700_000_000.123456)
        let row = try connection.query("""
            SELECT $1::int8 AS i, $2::text AS t, $3::bytea AS b, $4::timestamptz AS d, $5::float8 AS f, $6::bool AS o,
                   ($7::int8[])[2] AS a, array_length($8::bytea[], 1) AS n, ($8::bytea[])[2] IS NULL AS second_null,
                   ($9::jsonb[])[1] ->> 'k' AS j, NULL::text AS z
            """, [.int(-42), .text("héllo 'quoted' \"x\""), .bytea([0, 1, 255]), .timestamp(date), .double(2.5), .bool(true),
                  .array(.int8, [.int(1), .int(2)]), .array(.bytea, [.bytea([1]), .null, .bytea([])]),
                  .array(.jsonb, [.text(#"{"k": "v"}"#)])]).single("values")
        #expect(try row.int("i") == -42)
        #expect(try row.string("t") == "héllo 'quoted' \"x\"")
        #expect(try row.optionalBytes("b") == [0, 1, 255])
        #expect(abs(try row.date("d").timeIntervalSince(date)) < 0.000_01)
        #expect(try row.double("f") == 2.5)
        #expect(try row.bool("o"))
        #expect(try row.int("a") == 2)
        #expect(try row.int("n") == 3 && row.bool("second_null"))
        #expect(try row.string("j") == "v")
        #expect(try row.optionalString("z") == nil)
        #expect(throws: PostgresError.self) { try row.int("t") }
        #expect(throws: PostgresError.self) { try row.int("missing") }
    }

    @Test("passwords are masked in connection strings")
    func redaction() {
        #expect(ConnectionString.redacted("postgresql://kiroku:s3cr%40t@db.example:5432/queue")
                == "postgresql://kiroku:***@db.example:5432/queue")
        #expect(ConnectionString.redacted("postgresql://kiroku@db/queue?password=hunter2&sslmode=require")
                == "postgresql://kiroku@db/queue?password=***&sslmode=require")
        #expect(ConnectionString.redacted("host=db user=k password='a b\\'c' dbname=q") == "host=db user=k password=*** dbname=q")
        #expect(ConnectionString.redacted("postgresql://db/queue") == "postgresql://db/queue")
    }

    @Test("the connection string comes from the flag, then KIROKU_DATABASE_URL, then DATABASE_URL")
    func resolution() {
        let env = ["KIROKU_DATABASE_URL": "postgresql://a/k", "DATABASE_URL": "postgresql://a/d"]
        #expect(ConnectionString.resolve(explicit: "postgresql://flag/x", environment: env) == "postgresql://flag/x")
        #expect(ConnectionString.resolve(explicit: nil, environment: env) == "postgresql://a/k")
        #expect(ConnectionString.resolve(explicit: nil, environment: ["DATABASE_URL": "postgresql://a/d"]) == "postgresql://a/d")
        #expect(ConnectionString.resolve(explicit: nil, environment: [:]) == "")
    }

    @Test("a server that is down gives a connection error naming the host and port, without the password")
    func serverDown() throws {
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection("postgresql://kiroku:topsecret@127.0.0.1:1/queue")
        }
        #expect(error?.kind == .connection)
        #expect(error?.isConnectionLoss == true)
        #expect(error?.message.contains("127.0.0.1") == true && error?.message.contains("port 1") == true)
        #expect(error?.message.contains("topsecret") == false)
    }
}
