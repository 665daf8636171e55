import Foundation
/// Renders rows as left-aligned, space-separated columns under a header.
struct TextTable {
    let header: [String]
    var rows: [[String]] = []

    /// The table as text, one line per row.
    func render() -> String {
        let widths = header.indices.map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }
}
