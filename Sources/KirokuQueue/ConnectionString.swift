import Foundation

/// Where to find the database: an explicit URL or key=value string, else the environment.
public enum ConnectionString {
    /// The environment variables consulted, in order, when no URL is given explicitly.
    public static let environmentVariables = ["KIROKU_DATABASE_URL", "DATABASE_URL"]

    /// The connection string to use: `explicit`, else the first environment variable set, else ""
    /// (libpq's own defaults: PGHOST, PGPORT, PGUSER, PGDATABASE, ...).
    public static func resolve(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        for name in environmentVariables {
            if let value = environment[name], !value.isEmpty { return value }
        }
        return ""
    }

    /// Checks the form of a connection string, so a typo gets a message naming what to fix.
    public static func validate(_ connectionString: String) throws(PostgresError) {
        guard let schemeEnd = connectionString.range(of: "://") else { return }
        let scheme = connectionString[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgresql" || scheme == "postgres" else {
            throw PostgresError(
                .connection,
                "unsupported database URL scheme '\(scheme)' in \(redacted(connectionString))",
                hint: "Use postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE or libpq's key=value form."
            )
        }
    }

    /// The connection string with any password replaced by `***`, safe to print or log.
    public static func redacted(_ connectionString: String) -> String {
        var text = connectionString
        // URL userinfo: scheme://user:password@host
        if let schemeEnd = text.range(of: "://") {
            let authorityStart = schemeEnd.upperBound
            let authorityEnd = text[authorityStart...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? text.endIndex
            if let at = text[authorityStart..<authorityEnd].lastIndex(of: "@"),
               let colon = text[authorityStart..<at].firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        // password=... in key=value strings and URL query parameters.
        return text.replacing(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)/.ignoresCase()) { match in
            "\(match.output.1)***"
        }
    }
}
