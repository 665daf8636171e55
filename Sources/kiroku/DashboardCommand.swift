import ArgumentParser
import Foundation
import KirokuAdvisor
import KirokuEndpoints
import KirokuQueue
import Logging
import ServiceLifecycle

/// `kiroku dashboard`: the operator's live, read-only view of the queue and the move.
struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve a live, read-only web page of the queue, the workers, the shadow comparison and the cut-over.",
        discussion: """
            The page polls /api/dashboard (the same JSON for scripts) every second. Connect as a login \
            granted kiroku_viewer: it reads aggregates only, never an image, URI or result. It listens on \
            loopback unless --listen says otherwise; anything wider needs --token-file (send the token as \
            `Authorization: Bearer TOKEN`, or as the password of the browser's login prompt). SIGTERM or \
            SIGINT stops it.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "HOST:PORT to listen on (port 0: any free port).")
    var listen = "127.0.0.1:8080"

    @Option(help: "A file holding the token every request must carry (at least 16 characters; the first line is read).")
    var tokenFile: String?

    @Option(help: "The cut-over shown: the legacy pool.")
    var from = "gpu"

    @Option(help: "The cut-over shown: the new pool.")
    var to = "cpu"

    /// The host and port of --listen.
    func address() throws -> (host: String, port: Int) {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--listen '\(listen)' is not HOST:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--listen '\(listen)' names no host: give 127.0.0.1:\(port) or 0.0.0.0:\(port)") }
        return (host, port)
    }

    func validate() throws {
        let host = try address().host
        let loopback = host.lowercased() == "localhost" || Loopback.isLiteral(host)
        guard loopback || tokenFile != nil else {
            throw ValidationError("--listen \(listen) is reachable from other hosts: give --token-file FILE so that only holders of the token see the queue")
        }
        guard from != to else { throw ValidationError("--from and --to name the same pool '\(to)'") }
    }

    /// The token from --token-file, checked.
    func token() throws -> String? {
        guard let tokenFile else { return nil }
        let text: String
        do {
            text = try String(contentsOfFile: tokenFile, encoding: .utf8)
        } catch {
            throw UsageError(description: "--token-file \(tokenFile) cannot be read: \(error.localizedDescription)")
        }
        let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.count >= 16, token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw UsageError(description: "--token-file \(tokenFile): the token must be at least 16 printable ASCII characters without spaces")
        }
        return token
    }

    func run() async throws {
        let url = try database.connectionString()
        let (host, port) = try address()
        let token = try token()
        let logger = Logger(label: "kiroku.dashboard")
        if let tokenFile, let mode = (try? FileManager.default.attributesOfItem(atPath: tokenFile))?[.posixPermissions] as? Int, mode & 0o077 != 0 {
            logger.warning("the token file is readable by other users: chmod 600 it", metadata: ["file": "\(tokenFile)"])
        }
        let dashboard = try Dashboard(connectionString: url, from: from, to: to, logger: logger)
        let site = ReadOnlySite.make(pages: dashboard.pages, token: token, host: host, port: port, serverName: "kiroku-dashboard",
                                     logger: Logger(label: "kiroku.http")) { bound in
            let shown = host.contains(":") ? "[\(host)]" : host
            logger.notice("dashboard listening", metadata: ["url": "http://\(shown):\(bound)/", "token": "\(token != nil)",
                                                            "database": "\(ConnectionString.redacted(url))"])
            print("dashboard: http://\(shown):\(bound)/")
            fflush(nil)  // the address at once, even into a pipe
        }
        try await ServiceGroup(configuration: ServiceGroupConfiguration(services: [site], gracefulShutdownSignals: [.sigterm, .sigint],
                                                                        logger: logger)).run()
    }
}
