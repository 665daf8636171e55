import AsyncHTTPClient
import Foundation
import KirokuQueue
import NIOCore

/// A job's image bytes: inline from the claim, or fetched from its URI as the fetch policy
/// allows, within the size cap and the timeout.
public struct ImageFetcher: Sendable {
    /// The bounds every fetch keeps to.
    public let limits: FetchLimits
    /// What may be fetched.
    public let policy: FetchPolicy

    /// Creates a fetcher.
    public init(limits: FetchLimits, policy: FetchPolicy = .standard) {
        self.limits = limits
        self.policy = policy
    }

    /// The image bytes of a claimed job.
    public func bytes(of job: ClaimedJob) async throws(FetchError) -> [UInt8] {
        if let image = job.image {
            guard image.count <= limits.maximumBytes else { throw tooLarge("job \(job.id)'s inline image", image.count) }
            return image
        }
        guard let uri = job.imageURI else { throw FetchError(.invalidURI, "job \(job.id) has neither image bytes nor a URI") }
        return try await fetch(uri)
    }

    /// The bytes at a file://, http:// or https:// URI, if the policy allows it.
    public func fetch(_ uri: String) async throws(FetchError) -> [UInt8] {
        guard let url = URL(string: uri), let scheme = url.scheme?.lowercased() else {
            throw FetchError(.invalidURI, "not a valid URI: \(uri.prefix(200))")
        }
        switch scheme {
        case "file": return try readFile(try policy.checkedFilePath(for: url), uri: uri)
        case "http", "https": return try await download(url)
        default: throw .refused("scheme not allowed", "\(uri.prefix(200)): only http, https and (with --file-root) file are fetched")
        }
    }

    private func readFile(_ path: String, uri: String) throws(FetchError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            throw FetchError(.unreachable, "cannot open \(uri): \(String(cString: strerror(code)))",
                             retryable: ![ENOENT, EACCES, ENOTDIR, EISDIR, ELOOP, ENAMETOOLONG].contains(code))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw FetchError(.unreachable, "cannot stat \(uri): \(String(cString: strerror(errno)))", retryable: true)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw FetchError(.unreachable, "\(uri) is not a regular file") }
        let size = Int(status.st_size)
        guard size <= limits.maximumBytes else { throw tooLarge(uri, size) }
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, size - done, off_t(done)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw FetchError(.unreachable, "reading \(uri) stopped after \(done) of \(size) bytes: \(count < 0 ? String(cString: strerror(errno)) : "end of file")",
                                 retryable: true)
            }
            done += count
        }
        return bytes
    }

    /// GET with redirects followed by hand, each hop checked by the policy and connected to the
    /// address that was checked (a client per hop whose DNS override pins it; SNI and the
    /// certificate check still use the host name).
    private func download(_ start: URL) async throws(FetchError) -> [UInt8] {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(limits.timeout.components.seconds) * 1_000_000_000
                                                         + limits.timeout.components.attoseconds / 1_000_000_000)
        var url = start
        for _ in 0...policy.maximumRedirects {
            let address = try await policy.checkedAddress(for: url)
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.dnsOverride = [url.host ?? "": address]
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            let outcome: Result<Hop, FetchError>
            do {
                outcome = .success(try await get(url, through: client, deadline: deadline))
            } catch let error as FetchError {
                outcome = .failure(error)
            } catch {
                outcome = .failure(classify(error, url))
            }
            try? await client.shutdown()
            switch try outcome.get() {
            case .bytes(let bytes): return bytes
            case .redirect(let next): url = next
            }
        }
        throw .refused("too many redirects", "\(start.absoluteString): more than \(policy.maximumRedirects) redirects")
    }

    private enum Hop { case bytes([UInt8]), redirect(URL) }

    private func get(_ url: URL, through client: HTTPClient, deadline: NIODeadline) async throws -> Hop {
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), deadline: deadline)
        let code = Int(response.status.code)
        if [301, 302, 303, 307, 308].contains(code) {
            _ = try? await response.body.collect(upTo: 64 << 10)
            guard let location = response.headers.first(name: "location"),
                  let next = URL(string: location, relativeTo: url)?.absoluteURL else {
                throw FetchError(.unreachable, "GET \(url.absoluteString): HTTP \(code) without a usable Location")
            }
            return .redirect(next)
        }
        guard (200..<300).contains(code) else {
            // 408, 425, 429 and 5xx are the server's passing trouble; other 4xx are final.
            throw FetchError(.unreachable, "GET \(url.absoluteString): HTTP \(code) \(response.status.reasonPhrase)",
                             retryable: code >= 500 || [408, 425, 429].contains(code))
        }
        if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > limits.maximumBytes {
            throw tooLarge(url.absoluteString, length)
        }
        var buffer = try await response.body.collect(upTo: limits.maximumBytes)
        return .bytes(buffer.readBytes(length: buffer.readableBytes) ?? [])
    }

    private func classify(_ error: any Error, _ url: URL) -> FetchError {
        let uri = url.absoluteString
        if error is NIOTooManyBytesError {
            return FetchError(.tooLarge, "GET \(uri): the body exceeds the \(limits.maximumBytes)-byte limit")
        }
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                return FetchError(.unreachable, "GET \(uri): timed out after \(limits.timeout)", retryable: true)
            }
            if error == .invalidURL || error == .emptyHost {
                return FetchError(.invalidURI, "GET \(uri): invalid URL (\(error))")
            }
        }
        return FetchError(.unreachable, "GET \(uri): \(error)", retryable: true)
    }

    private func tooLarge(_ what: String, _ size: Int) -> FetchError {
        FetchError(.tooLarge, "\(what) has \(size) bytes, over the \(limits.maximumBytes)-byte limit")
    }
}
