import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku route`: routing weights for running pools side by side.
struct Route: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set how jobs enqueued without a pool are shared between pools.",
        subcommands: [Set.self, Show.self])

    /// `kiroku route set cpu=20 gpu=80`.
    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the weights: each job without a pool goes to POOL with probability WEIGHT / total.",
            discussion: "Pools not named are removed from routing; with no routes at all, jobs go to 'cpu'. Jobs enqueued with --pool keep their pool.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "POOL=WEIGHT pairs, weights whole numbers ≥ 0, e.g. cpu=20 gpu=80.")
        var weights: [String]

        func parsed() throws -> [(pool: String, weight: Int)] {
            try weights.map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty, let weight = Int(parts[1]), weight >= 0 else {
                    throw ValidationError("'\(pair)' is not POOL=WEIGHT with a whole weight ≥ 0, e.g. cpu=20")
                }
                return (parts[0], weight)
            }
        }

        func validate() throws {
            let routes = try parsed()
            guard !routes.isEmpty else { throw ValidationError("give at least one POOL=WEIGHT") }
            guard Swift.Set(routes.map(\.pool)).count == routes.count else { throw ValidationError("each pool may appear once") }
            guard routes.contains(where: { $0.weight > 0 }) else { throw ValidationError("at least one weight must be above 0") }
        }

        func run() throws {
            let queue = try database.queue()
            try queue.setRoutes(try parsed())
            print(Show.render(try queue.routes()))
        }
    }

    /// `kiroku route show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the weights and each pool's share.")

        @OptionGroup var database: DatabaseOptions

        func run() throws {
            print(Self.render(try database.queue().routes()))
        }

        static func render(_ routes: [(pool: String, weight: Int)]) -> String {
            guard !routes.isEmpty else { return "no routes: jobs without a pool go to 'cpu'" }
            let total = routes.reduce(0) { $0 + $1.weight }
            var table = TextTable(header: ["POOL", "WEIGHT", "SHARE"])
            for route in routes {
                table.rows.append([route.pool, String(route.weight), String(format: "%.1f%%", 100 * Double(route.weight) / Double(max(total, 1)))])
            }
            return table.render()
        }
    }
}
