import AsyncHTTPClient
import Foundation
import Hummingbird
import KirokuQueue
import KirokuTestSupport
import KirokuWorker
import NIOCore
import ServiceLifecycle
import Testing

@Suite("Fetching images")
struct ImageFetcherTests {
    /// A timeout long enough for a loopback request on a loaded machine (0.5 s once timed out a 404
    /// while every other suite ran), and the slow route's delay past it: the client gives up first,
    /// and the server's graceful shutdown waits for that request a second at most.
    static let limits = FetchLimits(maximumBytes: 4096, timeout: .seconds(5))
    static let slowDelay = limits.timeout + .seconds(1)

    /// Runs `body` against a real HTTP server on loopback with the routes the cases need.
    static func withServer(_ body: (String) async throws -> Void) async throws {
        let router = Router()
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
        let port = try freePort()
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
                try await body(base)
                failure = nil
            } catch {
                failure = error
            }
            await server.triggerGracefulShutdown()
            try await group.waitForAll()
            if let failure { throw failure }
        }
    }

    static func outcome(_ uri: String) async -> Result<[UInt8], FetchError> {
        do {
            return .success(try await ImageFetcher(limits: limits).fetch(uri))
        } catch {
            return .failure(error)
        }
    }

    @Test("http(s): bytes on 200; 404 final; 503, 429 and timeouts retried; over the size cap final, with or without Content-Length")
    func http() async throws {
        try await Self.withServer { (base: String) async throws in
            #expect(try await Self.outcome(base + "/photo.jpg").get() == [0xFF, 0xD8, 1, 2, 3])
            for (path, retryable, words) in [("/missing.jpg", false, "HTTP 404"), ("/busy.jpg", true, "HTTP 503"),
                                             ("/limited.jpg", true, "HTTP 429"), ("/slow.jpg", true, "timed out"),
                                             ("/big.jpg", false, "limit"), ("/streamed.jpg", false, "limit")] {
                guard case .failure(let error) = await Self.outcome(base + path) else {
                    Issue.record("\(path) was fetched")
                    continue
                }
                #expect(error.retryable == retryable, "\(path): \(error)")
                #expect(error.message.contains(words) && error.message.contains(path), "\(path): \(error)")
            }
        }
        // Nobody listens: a connection error may pass, so it is retried.
        guard case .failure(let refused) = await Self.outcome("http://127.0.0.1:\(try freePort())/photo.jpg") else {
            Issue.record("fetched from a closed port")
            return
        }
        #expect(refused.retryable)
    }

    @Test("file://: bytes; a missing file, a directory or a file over the cap fail for good; other schemes are refused")
    func files() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-fetch-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = directory.appendingPathComponent("small.jpg"), large = directory.appendingPathComponent("large.jpg")
        try Data([1, 2, 3]).write(to: small)
        try Data(count: 5000).write(to: large)

        #expect(try await Self.outcome(small.absoluteString).get() == [1, 2, 3])
        for (uri, words) in [(directory.appendingPathComponent("none.jpg").absoluteString, "No such file"),
                             (directory.absoluteString, "not a regular file"), (large.absoluteString, "5000 bytes"),
                             ("ftp://example.com/a.jpg", "unsupported URI scheme 'ftp'")] {
            guard case .failure(let error) = await Self.outcome(uri) else {
                Issue.record("\(uri) was fetched")
                continue
            }
            #expect(!error.retryable && error.message.contains(words), "\(uri): \(error)")
        }
    }
}
