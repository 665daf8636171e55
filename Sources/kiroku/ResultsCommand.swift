import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku results`: finished jobs with their results or errors, as JSON lines or CSV.
struct Results: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print finished jobs (succeeded and failed) with their results, in job id order.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, csv, table
    }

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Only jobs finished within this long, e.g. 15m, 24h, 7d (default: all).",
            transform: DurationArgument.parse)
    var since: DurationArgument?

    @Option(help: "Only jobs of this pool.")
    var pool: String?

    @Option(help: "Output format: json (one object per line), csv, or table (for people: image, verdict, top label, score, ms of fetch + decode + inference, error).")
    var format: Format = .json

    func run() throws {
        let queue = try database.queue()
        if format == .csv { print(JobQueue.resultColumns.joined(separator: ",")) }
        var table = TextTable(header: Self.tableHeader)
        // Keyset pagination on id: bounded memory however many results there are.
        var after: Int64 = 0
        while true {
            let page = try queue.finishedJobs(since: since?.duration, pool: pool, afterID: after, limit: 1000)
            for row in page.rows {
                let fields = try JobFields(row: row, columns: page.columns)
                switch format {
                case .json: print(fields.json)
                case .csv: print(fields.csv)
                case .table: table.rows.append(try Self.tableRow(row))
                }
            }
            guard page.rows.count == 1000, let last = page.rows.last else { break }
            after = try last.int("id")
        }
        if format == .table { print(table.render()) }
    }

    /// The table's columns, matching `tableRow`.
    static let tableHeader = ["ID", "IMAGE", "STATE", "VERDICT", "TOP LABEL", "SCORE", "MS", "ERROR"]

    /// One job as a table row: the image's file name (or "inline"), the verdict and the best label.
    static func tableRow(_ row: PostgresRow) throws -> [String] {
        let image = try row.optionalString("image_uri").map { URL(string: $0)?.lastPathComponent ?? $0 } ?? "inline"
        let result = try row.optionalString("result").flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        let best = (result["top"] as? [[String: Any]])?.first
        let verdict = (result["food"] as? Bool).map { $0 ? "food" : "not food" } ?? "-"
        let score = (best?["score"] as? Double).map { String(format: "%.3f", $0) } ?? "-"
        // The work this image took (fetch, decode, inference), not its wait behind earlier ones.
        let timings = result["timings"] as? [String: Any] ?? [:]
        let work = ["fetch_ms", "decode_ms", "inference_ms"].compactMap { timings[$0] as? Double }
        let ms = work.isEmpty ? "-" : String(format: "%.0f", work.reduce(0, +))
        return [String(try row.int("id")), image, try row.string("state"), verdict, best?["label"] as? String ?? "-", score, ms,
                try row.optionalString("error") ?? ""]
    }
}

/// RFC 4180 field quoting.
enum CSV {
    static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
