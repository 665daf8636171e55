import Foundation

/// What a worker will fetch for a job (producers and their URIs are untrusted; SECURITY.md).
/// By default: `http` and `https` to public addresses only, at most 5 redirects, each hop checked
/// the same way, no user-info in URLs, no `file://`. The host is resolved once and the checked
/// address is the one connected to, so DNS rebinding gains nothing. An operator opens networks on
/// purpose (`--allow-network CIDR`) and directories for `file://` jobs (`--file-root DIR`).
public struct FetchPolicy: Sendable {
    /// Networks fetched from even though they are not public (an intranet CDN, a test server).
    public var allowedNetworks: [IPNetwork]
    /// Directories `file://` jobs may read under: as given (lexical check) and resolved (real path check).
    public private(set) var fileRoots: [(given: String, real: String)]
    /// The most redirects followed for one image.
    public var maximumRedirects: Int

    /// The default: public http(s) only, no files, 5 redirects.
    public static let standard = FetchPolicy()

    /// Creates a policy that allows `allowedNetworks` beside the public internet.
    public init(allowedNetworks: [IPNetwork] = [], maximumRedirects: Int = 5) {
        self.allowedNetworks = allowedNetworks
        self.fileRoots = []
        self.maximumRedirects = maximumRedirects
    }

    /// Allows `file://` jobs under `directory` (which must exist; symbolic links in it are resolved).
    public mutating func allowFiles(under directory: String) throws(FetchError) {
        guard directory.hasPrefix("/") else {
            throw FetchError(.invalidURI, "file root \(directory) is not an absolute path")
        }
        guard let real = Self.realPath(directory) else {
            throw FetchError(.unreachable, "file root \(directory): \(String(cString: strerror(errno)))")
        }
        fileRoots.append((Self.lexicallyNormalized(directory), real))
    }

    // MARK: http(s)

    /// The address to connect to for an http(s) URL: the host resolved once, every address it
    /// has checked. Refuses user-info, other schemes, and hosts with any non-public address
    /// that no allowed network covers.
    func checkedAddress(for url: URL) async throws(FetchError) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https" else {
            throw .refused("scheme not allowed", "\(url.absoluteString): only http and https are followed, not \(scheme)")
        }
        guard url.user == nil && url.password == nil else {
            throw .refused("user-info in URL", "\(Self.redacted(url)): URLs with a user name or password are refused")
        }
        guard var host = url.host, !host.isEmpty else { throw FetchError(.invalidURI, "\(url.absoluteString) has no host") }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let addresses = try await Self.resolve(host, uri: url.absoluteString)
        for address in addresses where !allowedNetworks.contains(where: { $0.contains(address) }) {
            if let rule = NonPublicAddresses.rule(for: address) {
                throw .refused(rule, "\(url.absoluteString): \(host) is \(IPNetwork.format(address)), a \(rule)")
            }
        }
        return IPNetwork.format(addresses[0])
    }

    /// Every address `host` resolves to (numeric forms included: decimal, hex, octal, IPv6).
    static func resolve(_ host: String, uri: String) async throws(FetchError) -> [[UInt8]] {
        let outcome: Result<[[UInt8]], FetchError> = await withCheckedContinuation { continuation in
            // getaddrinfo blocks: off the cooperative pool.
            DispatchQueue.global().async { continuation.resume(returning: lookUp(host, uri: uri)) }
        }
        return try outcome.get()
    }

    private static func lookUp(_ host: String, uri: String) -> Result<[[UInt8]], FetchError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            // A name that does not exist stays so; anything else (EAI_AGAIN...) may pass.
            let message = String(cString: gai_strerror(status))
            return .failure(FetchError(.unreachable, "\(uri): cannot resolve \(host): \(message)", retryable: status != EAI_NONAME))
        }
        defer { freeaddrinfo(list) }
        var addresses: [[UInt8]] = []
        for entry in sequence(first: first, next: { $0.pointee.ai_next }) {
            guard let socketAddress = entry.pointee.ai_addr else { continue }
            switch entry.pointee.ai_family {
            case AF_INET:
                var v4 = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                addresses.append(withUnsafeBytes(of: &v4) { Array($0) })
            case AF_INET6:
                var v6 = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                addresses.append(withUnsafeBytes(of: &v6) { Array($0) })
            default:
                continue
            }
        }
        guard !addresses.isEmpty else { return .failure(FetchError(.unreachable, "\(uri): \(host) has no IP address")) }
        return .success(addresses)
    }

    /// A URL with its user-info removed, for logs.
    static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(unparseable URL)" }
        components.user = nil
        components.password = nil
        return components.string ?? "(unparseable URL)"
    }

    // MARK: file://

    /// The real path a `file://` URL may be read from: under a file root both as written (`..`
    /// resolved) and as resolved on disk (symbolic links followed), with no host but `localhost`.
    func checkedFilePath(for url: URL) throws(FetchError) -> String {
        guard !fileRoots.isEmpty else {
            throw .refused("file URIs not enabled",
                           "\(url.absoluteString): this worker reads no files; start it with --file-root DIR to allow file:// jobs under DIR")
        }
        let host = url.host ?? ""
        guard host.isEmpty || host.lowercased() == "localhost" else {
            throw .refused("file URI with a host", "\(url.absoluteString): a file URI's host must be empty or localhost, not \(host)")
        }
        let path = url.path
        guard path.hasPrefix("/"), !path.utf8.contains(0) else { throw FetchError(.invalidURI, "\(url.absoluteString): not a file path") }
        guard fileRoots.contains(where: { Self.isInside(Self.lexicallyNormalized(path), $0.given) }) else {
            throw .refused("file outside the allowed roots", "\(url.absoluteString) is not under --file-root \(fileRoots.map(\.given))")
        }
        guard let real = Self.realPath(path) else {
            let code = errno
            // A missing or unreadable file stays so; anything else (EIO, EMFILE...) may pass.
            throw FetchError(.unreachable, "cannot open \(url.absoluteString): \(String(cString: strerror(code)))",
                             retryable: ![ENOENT, EACCES, ENOTDIR, ELOOP, ENAMETOOLONG].contains(code))
        }
        guard fileRoots.contains(where: { Self.isInside(real, $0.real) }) else {
            throw .refused("file outside the allowed roots", "\(url.absoluteString) resolves to \(real), outside --file-root")
        }
        return real
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `path` with `.`, `..` and repeated slashes resolved by text alone (no file system).
    static func lexicallyNormalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    static func isInside(_ path: String, _ root: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root + "/")
    }
}
