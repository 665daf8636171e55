import AsyncHTTPClient
import Foundation
import KirokuQueue
import NIOCore

/// A job's image bytes: inline from the claim, or fetched from its file:// or http(s):// URI,
/// within the size cap and the timeout.
public struct ImageFetcher: Sendable {
    /// The bounds every fetch keeps to.
    public let limits: FetchLimits
    private let client: HTTPClient

    /// Creates a fetcher; http(s) goes through `client` (the shared client by default).
    public init(limits: FetchLimits, client: HTTPClient = .shared) {
        self.limits = limits
        self.client = client
    }

    /// The image bytes of a claimed job.
    public func bytes(of job: ClaimedJob) async throws(FetchError) -> [UInt8] {
        if let image = job.image { return image }
        guard let uri = job.imageURI else { throw FetchError("job \(job.id) has neither image bytes nor a URI", retryable: false) }
        return try await fetch(uri)
    }

    /// The bytes at a file://, http:// or https:// URI.
    public func fetch(_ uri: String) async throws(FetchError) -> [UInt8] {
        guard let url = URL(string: uri), let scheme = url.scheme?.lowercased() else {
            throw FetchError("not a valid URI: \(uri)", retryable: false)
        }
        switch scheme {
        case "file": return try readFile(url.path, uri: uri)
        case "http", "https": return try await download(uri)
        default: throw FetchError("unsupported URI scheme '\(scheme)' in \(uri) (file, http and https are)", retryable: false)
        }
    }

    private func readFile(_ path: String, uri: String) throws(FetchError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            // A missing or unreadable file stays so; anything else (EIO, EMFILE...) may pass.
            throw FetchError("cannot open \(uri): \(String(cString: strerror(code)))",
                             retryable: ![ENOENT, EACCES, ENOTDIR, EISDIR, ELOOP, ENAMETOOLONG].contains(code))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw FetchError("cannot stat \(uri): \(String(cString: strerror(errno)))", retryable: true)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw FetchError("\(uri) is not a regular file", retryable: false) }
        let size = Int(status.st_size)
        guard size <= limits.maximumBytes else { throw tooLarge(uri, size) }
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, size - done, off_t(done)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw FetchError("reading \(uri) stopped after \(done) of \(size) bytes: \(count < 0 ? String(cString: strerror(errno)) : "end of file")", retryable: true)
            }
            done += count
        }
        return bytes
    }

    private func download(_ uri: String) async throws(FetchError) -> [UInt8] {
        let timeout = TimeAmount.nanoseconds(Int64(limits.timeout.components.seconds) * 1_000_000_000
                                              + limits.timeout.components.attoseconds / 1_000_000_000)
        do {
            let response = try await client.execute(HTTPClientRequest(url: uri), timeout: timeout)
            let code = Int(response.status.code)
            guard (200..<300).contains(code) else {
                // 408, 425, 429 and 5xx are the server's passing trouble; other 4xx are final.
                let retryable = code >= 500 || [408, 425, 429].contains(code)
                throw FetchError("GET \(uri): HTTP \(code) \(response.status.reasonPhrase)", retryable: retryable)
            }
            if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > limits.maximumBytes {
                throw tooLarge(uri, length)
            }
            var buffer = try await response.body.collect(upTo: limits.maximumBytes)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch let error as FetchError {
            throw error
        } catch is NIOTooManyBytesError {
            throw FetchError("GET \(uri): the body exceeds the \(limits.maximumBytes)-byte limit", retryable: false)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw FetchError("GET \(uri): timed out after \(limits.timeout)", retryable: true)
        } catch let error as HTTPClientError where error == .invalidURL || error == .emptyHost {
            throw FetchError("GET \(uri): invalid URL (\(error))", retryable: false)
        } catch {
            throw FetchError("GET \(uri): \(error)", retryable: true)
        }
    }

    private func tooLarge(_ uri: String, _ size: Int) -> FetchError {
        FetchError("\(uri) has \(size) bytes, over the \(limits.maximumBytes)-byte limit", retryable: false)
    }
}
