import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku jobs`: inspect individual jobs.
struct Jobs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect jobs.", subcommands: [Show.self])

    /// `kiroku jobs show ID`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one job: state, attempts, lease, timings, result or error.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The job id.")
        var id: Int64

        @Flag(help: "Print one JSON object.")
        var json = false

        func run() throws {
            guard let job = try database.queue().jobDetails(id) else {
                printError("kiroku: job \(id) does not exist (or was pruned)")
                throw ReportedFailure()
            }
            let fields = try JobFields(row: job.row, columns: job.columns)
            print(json ? fields.json : fields.text)
        }
    }
}

/// A job row as ordered (name, value) pairs, for text and JSON output.
struct JobFields {
    /// Each column and its value as JSON (strings quoted, JSON columns embedded).
    let values: [(name: String, json: String, text: String)]

    /// ISO 8601 with milliseconds, made once: `results` formats every row with it.
    nonisolated(unsafe) private static let iso: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    init(row: PostgresRow, columns: [String]) throws {
        let iso = Self.iso
        values = try columns.map { column in
            switch try row.cell(column) {
            case .null: return (column, "null", "-")
            case .int(let value): return (column, "\(value)", "\(value)")
            case .double(let value): return (column, "\(value)", "\(value)")
            case .bool(let value): return (column, "\(value)", "\(value)")
            case .timestamp(let date): return (column, JSONText.quote(iso.string(from: date)), iso.string(from: date))
            case .bytes(let bytes): return (column, "\(bytes.count)", "\(bytes.count) bytes")
            case .text(let text):
                let isJSON = column == "result" || column == "timings"
                return (column, isJSON ? text : JSONText.quote(text), text)
            }
        }
    }

    /// One JSON object, keys in column order.
    var json: String {
        "{" + values.map { JSONText.quote($0.name) + ":" + $0.json }.joined(separator: ",") + "}"
    }

    /// One CSV record, NULLs empty.
    var csv: String {
        values.map { CSV.field($0.json == "null" ? "" : $0.text) }.joined(separator: ",")
    }

    /// One "name: value" line per column.
    var text: String {
        let width = values.map(\.name.count).max() ?? 0
        return values.map { $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.text }
            .joined(separator: "\n")
    }
}

/// JSON string quoting for hand-assembled output that embeds stored JSON verbatim.
enum JSONText {
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
