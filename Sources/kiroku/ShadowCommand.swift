import ArgumentParser
import Foundation
import KirokuAdvisor
import KirokuQueue

/// `kiroku shadow`: compare two pools on the same images before cutting over.
struct Shadow: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Duplicate a sample of new jobs to the other pool and compare the results.",
        subcommands: [Set.self, Off.self, Show.self])

    /// A share given as "5%" or "0.05".
    static func fraction(_ text: String) throws -> Double {
        let percent = text.hasSuffix("%")
        guard let value = Double(percent ? String(text.dropLast()) : text) else {
            throw ValidationError("'\(text)' is not a share: give a percentage such as 5% or a fraction such as 0.05")
        }
        let fraction = percent ? value / 100 : value
        guard (0...1).contains(fraction) else { throw ValidationError("'\(text)' is outside 0–100%") }
        return fraction
    }

    /// `kiroku shadow set 5% [--pools cpu,gpu]`.
    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Duplicate this share of new jobs in either pool to the other (linked; the duplicate never changes the original's result).")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The share, e.g. 5% or 0.05.", transform: Shadow.fraction)
        var share: Double

        @Option(help: "The two pools compared, A,B.")
        var pools = "cpu,gpu"

        func pair() throws -> (String, String) {
            let parts = pools.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, parts[0] != parts[1] else {
                throw ValidationError("--pools takes two different pools, e.g. cpu,gpu")
            }
            return (parts[0], parts[1])
        }

        func validate() throws { _ = try pair() }

        func run() throws {
            let (a, b) = try pair()
            try database.queue().setShadow(fraction: share, poolA: a, poolB: b)
            print(String(format: "shadowing %g%% of new jobs between %@ and %@", share * 100, a, b))
        }
    }

    /// `kiroku shadow off`.
    struct Off: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop duplicating new jobs (the comparison so far stays).")

        @OptionGroup var database: DatabaseOptions

        func run() throws {
            try database.queue().stopShadow()
            print("shadowing off")
        }
    }

    /// `kiroku shadow show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Compare the pools on the duplicated jobs and recommend whether to cut over.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "Know the disagreement rate to within this, e.g. 0.1%.", transform: Shadow.fraction)
        var precision = ShadowComparison.defaultPrecision

        @Option(help: "The disagreement rate that still allows cutting over, e.g. 1%.", transform: Shadow.fraction)
        var tolerance = ShadowComparison.defaultTolerance

        @Option(help: "What the cut-over gate judges: decision (the sidecar's food verdict, the default when results carry it) or top1.")
        var gate: ShadowComparison.Measure?

        @Flag(help: "One JSON object.")
        var json = false

        func validate() throws {
            guard precision > 0 else { throw ValidationError("--precision must be above 0") }
        }

        func run() throws {
            let comparison = try ShadowComparison.measure(try database.connect(), precision: precision, tolerance: tolerance, gate: gate)
            if json {
                print(try AdviceReport.json(comparison))
                return
            }
            let sampling = comparison.fraction.map { String(format: "%g%% of new jobs between %@ and %@", $0 * 100, comparison.poolA ?? "?", comparison.poolB ?? "?") } ?? "off"
            var lines = ["shadowing: \(sampling)", "compared: " + comparison.agreementText]
            if let difference = comparison.meanScoreDifference { lines.append(String(format: "mean |top-1 score difference|: %.4f", difference)) }
            for pool in comparison.pools {
                lines.append(String(format: "pool %@: %d results, decode %@, %@ from claim to result (mean)", pool.pool, pool.results,
                                    pool.decodeModes.joined(separator: "/"), pool.meanSeconds.map { String(format: "%.1f ms", $0 * 1000) } ?? "-"))
            }
            lines += comparison.warnings.map { "warning: " + $0 }
            lines.append(comparison.recommendation)
            print(lines.joined(separator: "\n"))
        }
    }
}

extension ShadowComparison.Measure: ExpressibleByArgument {}
