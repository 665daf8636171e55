import Foundation

/// Renders advice for people (a terminal report with every rule's working) and for programs (JSON).
public enum AdviceReport {
    /// The JSON document of advice (or any part of it): snake_case keys, sorted, ISO 8601 times,
    /// "inf" for an unbounded wait.
    public static func json(_ advice: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(advice), as: UTF8.self)
    }

    /// The terminal report.
    public static func text(_ advice: Advice) -> String {
        var lines = ["Kiroku advisor (\(advice.mode)): \(advice.objective.description); instance catalog of \(advice.catalogDate)"]
        lines.append(contentsOf: advice.notes.map { "note: \($0)" })
        for pool in advice.pools {
            let o = pool.observation
            lines.append("")
            lines.append(String(format: "Pool %@: %.3g jobs/s arriving, %.3g s per image per host on %@%@, %d queued, %d running%@%@",
                                o.pool, o.arrivalRate, o.serviceTime, pool.instanceType, pool.serviceTimeEstimated ? " (estimated from another type)" : "",
                                o.queued, o.running, o.scheduled.map { String(format: ", %d scheduled for later", $0.total) } ?? "", o.currentInstances.map { ", \($0) hosts now" } ?? ""))
            for note in o.notes { lines.append("  note: \(note)") }
            var table = [["rule", "hosts", "working"]]
            for term in pool.sizing.terms { table.append([term.rule, String(term.instances), term.working]) }
            lines.append(contentsOf: columns(table).map { "  " + $0 })
            let s = pool.sizing
            lines.append(String(format: "  => %d x %@%@: mean wait %@, P(wait > %@) %.1f%%, hosts %.0f%% busy",
                                s.recommended, pool.instanceType, s.limitedByMaximum ? " (capped by the maximum: the objective is NOT met)" : "",
                                milliseconds(s.meanWait), milliseconds(advice.objective.target), s.probabilityOverTarget * 100, s.utilisation * 100))
            let c = pool.cost
            lines.append(String(format: "  cost (%@): $%.2f/h for the pool ($%.3f/h per host%@); per million images $%.2f at saturation, $%.2f at %.0f%% busy",
                                c.region, c.poolPerHour, c.blendedPerHour,
                                c.spotFraction > 0 ? String(format: ", %.0f%% spot", c.spotFraction * 100) : " on-demand",
                                c.perMillionAtSaturation, c.perMillionAtUtilisation, c.utilisation * 100))
            if let now = pool.currentCost {
                lines.append(String(format: "  now: %d hosts at %.0f%% measured utilisation: $%.2f/h, $%.2f per million images",
                                    o.currentInstances ?? 0, now.utilisation * 100, now.poolPerHour, now.perMillionAtUtilisation))
            }
            var sizes = [["type", "vCPU", "s/image", "hosts", "$/h", "$/M images", ""]]
            for option in pool.alternatives {
                sizes.append([option.instanceType, String(option.vcpu), String(format: "%.3g", option.serviceTime), String(option.instances),
                              String(format: "%.2f", option.poolPerHour), String(format: "%.2f", option.perMillionAtUtilisation),
                              (option.estimated ? "estimate (scaled by vCPU)" : "measured") + (option.meetsObjective ? "" : ", objective not met")])
            }
            lines.append("  the same objective on each size:")
            lines.append(contentsOf: columns(sizes).map { "    " + $0 })
            if let cheapest = pool.cheapest {
                lines.append(String(format: "  cheapest size meeting the objective: %d x %@ at $%.2f/h%@", cheapest.instances, cheapest.instanceType,
                                    cheapest.poolPerHour, cheapest.estimated ? " (its speed is an estimate: measure it before switching)" : ""))
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func milliseconds(_ seconds: Double) -> String {
        seconds.isFinite ? String(format: "%.0f ms", seconds * 1000) : "unbounded"
    }

    static func columns(_ rows: [[String]]) -> [String] {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }
    }
}
