import AsyncHTTPClient
import Foundation
import Hummingbird
import KirokuQueue
import KirokuTestSupport
import KirokuWorker
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

@Suite("Fetching images")
struct ImageFetcherTests {
    /// The test server's own address, opened on purpose; every other loopback address stays refused.
    static let loopbackOnly = FetchPolicy(allowedNetworks: [IPNetwork("127.0.0.1/32")!])
    /// A timeout long enough for a loopback request on a loaded machine (0.5 s once timed out a 404
    /// while every other suite ran), and the slow route's delay past it: the client gives up first,
    /// and the server's graceful shutdown waits for that request a second at most.
    static let limits = FetchLimits(maximumBytes: 4096, timeout: .seconds(5))
    static let slowDelay = limits.timeout + .seconds(1)

    /// Counts the requests the test server saw, by path.
    final class Requests: Sendable {
        private let seen = Mutex<[String]>([])
        func record(_ path: String) { seen.withLock { $0.append(path) } }
        func count(_ path: String) -> Int { seen.withLock { $0.filter { $0 == path }.count } }
        var total: Int { seen.withLock { $0.count } }
    }

    /// Runs `body` against a real HTTP server on loopback with the routes the cases need.
    static func withServer(_ body: (String, Requests) async throws -> Void) async throws {
        let requests = Requests()
        let port = try freePort()
        let router = Router()
        router.middlewares.add(RequestCounter(requests: requests))
        router.get("photo.jpg") { _, _ in Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(bytes: [0xFF, 0xD8, 1, 2, 3]))) }
        router.get("missing.jpg") { _, _ in Response(status: .notFound) }
        router.get("busy.jpg") { _, _ in Response(status: .serviceUnavailable) }
        router.get("limited.jpg") { _, _ in Response(status: .tooManyRequests) }
        router.get("slow.jpg") { _, _ -> Response in
            try await Task.sleep(for: slowDelay)
            return Response(status: .ok)
        }
        router.get("big.jpg") { _, _ in Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(repeating: 7, count: 10_000))) }
        router.get("streamed.jpg") { _, _ in
            // No Content-Length: the cap must hold while reading.
            Response(status: .ok, body: ResponseBody { writer in
                for _ in 0..<10 { try await writer.write(ByteBuffer(repeating: 1, count: 1000)) }
                try await writer.finish(nil)
            })
        }
        // Redirects: to an allowed path, to addresses and schemes the policy refuses, in a loop.
        let redirects = ["to-photo": "/photo.jpg", "to-loopback-2": "http://127.0.0.2:\(port)/photo.jpg",
                         "to-metadata": "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
                         "to-file": "file:///etc/passwd", "to-postgres": "http://[::1]:5432/", "loop": "/loop"]
        for (path, location) in redirects {
            router.get(RouterPath(path)) { _, _ in Response(status: .found, headers: [.location: location]) }
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        // Stopped by a graceful shutdown, not by cancelling its task: a connection accepted as the
        // task is cancelled is never served, and NIO stops the whole process for it
        // ("Deinited NIOAsyncWriter without calling finish()", swift-nio issue 2813).
        let server = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let base = "http://127.0.0.1:\(port)"
            for _ in 0..<100 {
                if (try? await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/photo.jpg"), timeout: .seconds(1))) != nil { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let failure: (any Error)?
            do {
                try await body(base, requests)
                failure = nil
            } catch {
                failure = error
            }
            await server.triggerGracefulShutdown()
            try await group.waitForAll()
            if let failure { throw failure }
        }
    }

    struct RequestCounter: RouterMiddleware {
        let requests: Requests
        func handle(_ request: Request, context: BasicRequestContext,
                    next: (Request, BasicRequestContext) async throws -> Response) async throws -> Response {
            requests.record(request.uri.path)
            return try await next(request, context)
        }
    }

    static func outcome(_ uri: String, policy: FetchPolicy = loopbackOnly) async -> Result<[UInt8], FetchError> {
        do {
            return .success(try await ImageFetcher(limits: limits, policy: policy).fetch(uri))
        } catch {
            return .failure(error)
        }
    }

    static func failure(_ uri: String, policy: FetchPolicy = loopbackOnly) async -> FetchError? {
        guard case .failure(let error) = await outcome(uri, policy: policy) else {
            Issue.record("\(uri) was fetched")
            return nil
        }
        return error
    }

    @Test("http(s): bytes on 200; 404 final; 503, 429 and timeouts retried; over the size cap final, with or without Content-Length")
    func http() async throws {
        try await Self.withServer { (base: String, _) async throws in
            #expect(try await Self.outcome(base + "/photo.jpg").get() == [0xFF, 0xD8, 1, 2, 3])
            #expect(try await Self.outcome(base + "/to-photo").get() == [0xFF, 0xD8, 1, 2, 3], "a redirect within the policy is followed")
            for (path, retryable, reason, words) in [
                ("/missing.jpg", false, FetchError.Reason.unreachable, "HTTP 404"), ("/busy.jpg", true, .unreachable, "HTTP 503"),
                ("/limited.jpg", true, .unreachable, "HTTP 429"), ("/slow.jpg", true, .unreachable, "timed out"),
                ("/big.jpg", false, .tooLarge, "limit"), ("/streamed.jpg", false, .tooLarge, "limit"),
            ] {
                guard let error = await Self.failure(base + path) else { continue }
                #expect(error.retryable == retryable && error.reason == reason, "\(path): \(error)")
                #expect(error.detail.contains(words) && error.detail.contains(path), "\(path): \(error)")
                // What producers read names the category only: no status, no size, no URL.
                let stored = "\(error.reason)"
                #expect(stored.allSatisfy { !$0.isNumber }, "\(path): \(stored)")
            }
        }
        // Nobody listens: a connection error may pass, so it is retried.
        let refused = await Self.failure("http://127.0.0.1:\(try freePort())/photo.jpg")
        #expect(refused?.retryable == true && refused?.reason == .unreachable)
    }

    @Test("redirects: every hop is checked before it is requested; loopback, metadata, file: and [::1] targets are refused; at most 5")
    func redirects() async throws {
        try await Self.withServer { (base: String, requests: Requests) async throws in
            for (path, rule) in [("/to-loopback-2", "loopback address"), ("/to-metadata", "link-local address (cloud metadata)"),
                                 ("/to-file", "scheme not allowed"), ("/to-postgres", "loopback address")] {
                let before = requests.total
                let error = await Self.failure(base + path)
                #expect(error?.reason == .refused(rule) && error?.retryable == false, "\(path): \(String(describing: error))")
                #expect(requests.total - before == 1, "\(path): the server saw only the first request")
            }
            let loop = await Self.failure(base + "/loop")
            #expect(loop?.reason == .refused("too many redirects"))
            #expect(requests.count("/loop") == 6, "the first request and 5 redirects")
        }
    }

    @Test("the default policy refuses every non-public address, in every numeric form, before connecting")
    func addressForms() async throws {
        let cases = [
            ("http://127.0.0.1/", "loopback address"), ("http://localhost/", "loopback address"),
            ("http://0x7f000001/", "loopback address"), ("http://2130706433/", "loopback address"),
            ("http://0177.0.0.1/", "loopback address"), ("http://127.1/", "loopback address"),
            ("http://[::1]:5432/", "loopback address"), ("http://0.0.0.0/", "this-network address"),
            ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "link-local address (cloud metadata)"),
            ("http://0xa9fea9fe/", "link-local address (cloud metadata)"), ("http://10.1.2.3/", "private address"),
            ("http://012.1.2.3/", "private address"), ("http://172.16.0.1/", "private address"),
            ("http://192.168.1.1/", "private address"), ("http://100.64.0.1/", "carrier-grade NAT address"),
            ("http://224.0.0.1/", "multicast address"), ("http://255.255.255.255/", "reserved or broadcast address"),
            ("http://[fc00::1]/", "unique-local IPv6 address"), ("http://[fd12:3456::1]/", "unique-local IPv6 address"),
            ("http://[fe80::1]/", "link-local IPv6 address"), ("http://[ff02::1]/", "multicast address"),
            ("http://[::ffff:127.0.0.1]/", "IPv4-mapped IPv6 address"),
            ("http://[::ffff:a9fe:a9fe]/", "IPv4-mapped IPv6 address"),
            ("http://[::7f00:1]/", "unspecified or IPv4-compatible IPv6 address"),
            ("https://user:secret@example.com/a.jpg", "user-info in URL"), ("ftp://example.com/a.jpg", "scheme not allowed"),
            ("gopher://127.0.0.1:5432/", "scheme not allowed"),
        ]
        for (uri, rule) in cases {
            let error = await Self.failure(uri, policy: .standard)
            #expect(error?.reason == .refused(rule) && error?.retryable == false, "\(uri): \(String(describing: error))")
            #expect(error?.detail.contains("secret") != true, "\(uri): the password is not logged")
        }
        // An allowed network opens exactly itself.
        let policy = FetchPolicy(allowedNetworks: [IPNetwork("10.0.0.0/8")!])
        #expect(await Self.failure("http://10.255.255.255:1/x.jpg", policy: policy)?.reason == .unreachable)
        #expect(await Self.failure("http://11.0.0.1:1/x.jpg", policy: FetchPolicy(allowedNetworks: [IPNetwork("11.0.0.0/32")!]))?.reason
                != .refused("private address"))
        #expect(await Self.failure("http://172.16.0.1/", policy: policy)?.reason == .refused("private address"))
    }

    @Test("file://: only under a file root, as written and as resolved; missing files, directories and files over the cap fail for good")
    func files() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-fetch-\(UUID().uuidString.prefix(8))")
        let directory = base.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let small = directory.appendingPathComponent("small.jpg"), large = directory.appendingPathComponent("large.jpg")
        try Data([1, 2, 3]).write(to: small)
        try Data(count: 5000).write(to: large)
        try Data([9]).write(to: base.appendingPathComponent("outside.jpg"))
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("passwd.jpg").path, withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("up").path, withDestinationPath: base.path)
        var policy = FetchPolicy.standard
        try policy.allowFiles(under: directory.path)

        #expect(try await Self.outcome(small.absoluteString, policy: policy).get() == [1, 2, 3])
        #expect(try await Self.outcome("file://localhost" + small.path, policy: policy).get() == [1, 2, 3])
        let root = directory.path
        for (uri, reason) in [
            ("file://\(root)/none.jpg", FetchError.Reason.unreachable), ("file://\(root)/", .unreachable),
            (large.absoluteString, .tooLarge),
            ("file://\(root)/../outside.jpg", .refused("file outside the allowed roots")),
            ("file://\(root)/%2E%2E/outside.jpg", .refused("file outside the allowed roots")),
            ("file://\(root)/../../../../etc/passwd", .refused("file outside the allowed roots")),
            ("file:///etc/passwd", .refused("file outside the allowed roots")),
            ("file:///etc/no-such-file", .refused("file outside the allowed roots")),
            ("file://\(root)/passwd.jpg", .refused("file outside the allowed roots")),
            ("file://\(root)/up/outside.jpg", .refused("file outside the allowed roots")),
            ("file://evil.example\(small.path)", .refused("file URI with a host")),
        ] {
            let error = await Self.failure(uri, policy: policy)
            #expect(error?.reason == reason && error?.retryable == false, "\(uri): \(String(describing: error))")
        }
        // Without a root, no file is read, and the refusal says how to enable them.
        let disabled = await Self.failure(small.absoluteString, policy: .standard)
        #expect(disabled?.reason == .refused("file URIs not enabled") && disabled?.detail.contains("--file-root") == true)
        #expect(throws: FetchError.self) { try policy.allowFiles(under: base.path + "/nonexistent") }
    }
}
