import ArgumentParser
import Foundation
import KirokuAdvisor

/// A duration given on the command line: a number and a unit, units combinable ("90s", "15m",
/// "1h30m", "7d", "250ms"); units ms, s, m, h, d, w.
struct DurationArgument: Sendable, Equatable {
    /// The duration.
    let duration: Duration

    /// Parses the text, or explains what a valid duration looks like.
    static func parse(_ text: String) throws -> DurationArgument {
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
        var rest = Substring(text.trimmingCharacters(in: .whitespaces).lowercased())
        var total = 0.0
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            rest = rest.dropFirst(number.count)
            let unitText = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unitText.count)
            guard let value = Double(number), let unit = units.first(where: { $0.suffix == unitText }) else {
                throw ValidationError("invalid duration '\(text)': use a number and a unit (ms, s, m, h, d, w), e.g. 90s, 15m, 1h30m, 7d")
            }
            total += value * unit.seconds
        }
        guard !text.isEmpty else {
            throw ValidationError("invalid duration '': use a number and a unit, e.g. 90s, 15m, 7d")
        }
        return DurationArgument(duration: .milliseconds(Int64((total * 1000).rounded())))
    }
}

/// `--expect HH:MM-HH:MM=RATE`: arrivals expected daily in a UTC window (see `ArrivalForecast`).
enum ForecastArgument {
    /// Parses the text, or explains the format.
    static func parse(_ text: String) throws -> ArrivalForecast {
        guard let forecast = ArrivalForecast(text) else {
            throw ValidationError("invalid forecast '\(text)': use HH:MM-HH:MM=JOBS_PER_SECOND in UTC, e.g. 01:00-01:15=24")
        }
        return forecast
    }
}
