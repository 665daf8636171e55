import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// One GET route of a read-only site: its path, content type and body.
public struct SitePage: Sendable {
    /// The path, without the leading slash ("" for the root).
    public var path: String
    /// The Content-Type header.
    public var contentType: String
    /// Produces the body for each request.
    public var body: @Sendable () async throws -> [UInt8]

    /// A page whose body is computed per request.
    public init(path: String, contentType: String, body: @escaping @Sendable () async throws -> [UInt8]) {
        (self.path, self.contentType, self.body) = (path, contentType, body)
    }
}

/// A read-only HTTP site (Hummingbird): GET routes only, every response uncached and locked down
/// (no framing, no sniffing, scripts, styles and fetches from the site itself only), idle
/// connections closed after 30 s. With a token, every request must carry it, as `Authorization:
/// Bearer TOKEN` (scripts) or as the password of HTTP Basic (a browser's own prompt); otherwise 401
/// with an empty body, whatever the path. Without one (loopback only), a request must name a
/// loopback host, else 403: a web page whose name was rebound to 127.0.0.1 cannot read it.
public enum ReadOnlySite {
    /// The site as a service; `onListening` gets the bound port (useful with port 0).
    public static func make(pages: [SitePage], token: String?, host: String, port: Int, serverName: String, logger: Logger,
                            onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some Service {
        let router = Router()
        router.add(middleware: Guard(token: token.map { Array($0.utf8) }))
        for page in pages {
            router.get(RouterPath(page.path)) { _, _ -> Response in
                Response(status: .ok, headers: [.contentType: page.contentType],
                         body: ResponseBody(byteBuffer: ByteBuffer(bytes: try await page.body())))
            }
        }
        return Application(router: router, server: .http1(configuration: .init(idleTimeout: .seconds(30))),
                           configuration: .init(address: .hostname(host, port: port), serverName: serverName),
                           onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) }, logger: logger)
    }

    /// Checks the token (when there is one) and adds the headers every response carries.
    struct Guard<Context: RequestContext>: RouterMiddleware {
        let token: [UInt8]?

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            if let token, !Self.presents(token, request.headers[.authorization]) {
                var refused = Response(status: .unauthorized)
                refused.headers[.wwwAuthenticate] = "Basic realm=\"kiroku\", Bearer realm=\"kiroku\""
                return Self.lockedDown(refused)
            }
            if token == nil, !Self.namesLoopback(request.head.authority) {
                return Self.lockedDown(Response(status: .forbidden))
            }
            do {
                return Self.lockedDown(try await next(request, context))
            } catch let error as HTTPResponseError {
                return Self.lockedDown(try error.response(from: request, context: context))  // an unknown path: 404
            } catch {
                return Self.lockedDown(Response(status: .internalServerError))  // a page that failed says so in its own log
            }
        }

        /// True when the Authorization header carries `token` (Bearer, or Basic with any user name).
        static func presents(_ token: [UInt8], _ header: String?) -> Bool {
            guard let header else { return false }
            let parts = header.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { return false }
            switch parts[0].lowercased() {
            case "bearer":
                return equal(Array(parts[1].utf8), token)
            case "basic":
                guard let decoded = Data(base64Encoded: parts[1]).map(Array.init), let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else {
                    return false
                }
                return equal(Array(decoded[(colon + 1)...]), token)
            default:
                return false
            }
        }

        /// True when a Host header names a loopback address or localhost (with any port).
        static func namesLoopback(_ authority: String?) -> Bool {
            guard let authority else { return false }
            let host = authority.hasPrefix("[") ? String(authority.dropFirst().prefix { $0 != "]" }) : String(authority.prefix { $0 != ":" })
            return host.lowercased() == "localhost" || Loopback.isLiteral(host)
        }

        /// Compares in time that depends on the lengths only.
        static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            guard a.count == b.count else { return false }
            return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        }

        static func lockedDown(_ response: Response) -> Response {
            var response = response
            response.headers[.cacheControl] = "no-store"
            response.headers[.xContentTypeOptions] = "nosniff"
            response.headers[.contentSecurityPolicy] =
                "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
            return response
        }
    }
}

/// Loopback addresses written as IP literals: 127.0.0.0/8 and ::1 (names other than localhost
/// are not trusted to resolve to loopback).
public enum Loopback {
    /// True for an IPv4 literal in 127.0.0.0/8 or the IPv6 literal ::1.
    public static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } == Array(repeating: 0, count: 15) + [1] }
        return false
    }
}
