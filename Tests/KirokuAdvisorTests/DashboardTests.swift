import AsyncHTTPClient
import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

/// `kiroku dashboard` against a real PostgreSQL, connected as a kiroku_viewer login: the JSON API,
/// the token, what the role may not read, and the page in headless Chromium.
@Suite("The dashboard", .subprocesses)
struct DashboardTests {
    /// A migrated database, an admin queue client on it, and the URL of a new kiroku_viewer login.
    static func database() throws -> (url: String, admin: JobQueue, viewerURL: String, viewer: PostgresConnection) {
        let url = try TestDatabase.create()
        let (name, viewer) = try TestDatabase.login(in: ["kiroku_viewer"], database: url)
        let database = String(URLComponents(string: url)!.path.dropFirst())
        return (url, JobQueue(connection: try PostgresConnection(url)), try TestDatabase.url(database: database, user: name), viewer)
    }

    /// Starts `kiroku dashboard` and returns it with the address it printed.
    static func start(_ arguments: [String], databaseURL: String) async throws -> (process: ChildProcess, address: String) {
        let process = try ChildProcess(["dashboard", "--listen", "127.0.0.1:0"] + arguments, databaseURL: databaseURL)
        guard await process.waitForLog("dashboard listening", timeout: .seconds(60)),
              let match = process.stderr.firstMatch(of: /url=(http:\/\/127\.0\.0\.1:\d+\/)/) else {
            let output = await process.wait(timeout: .seconds(5))
            throw Browser.Failure(description: "the dashboard did not start: \(output.stderr)")
        }
        return (process, String(match.1))
    }

    /// GET `path` with an optional Authorization header: status, headers and body.
    static func get(_ address: String, _ path: String, authorization: String? = nil) async throws -> (status: Int, headers: [String: String], body: String) {
        var request = HTTPClientRequest(url: address + path)
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let headers = Dictionary(response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        return (Int(response.status.code), headers, String(buffer: try await response.body.collect(upTo: 4 << 20)))
    }

    /// A claimed job of `pool` finished: succeeded, or failed with the category `error`; returns its id.
    @discardableResult
    static func finish(_ queue: JobQueue, pool: String, worker: String, error: String? = nil) throws -> Int64 {
        let job = try #require(try queue.claim(workerID: worker, pool: pool, maxJobs: 1, lease: .seconds(60)).first)
        if let error {
            _ = try queue.fail(job.lease, error: error, retryable: false)
        } else {
            let result = #"{"top": [{"index": 1, "label": "a", "score": 0.9}], "food": true, "food_score": 0.9, "model": {"name": "m"}}"#
            #expect(try queue.complete(job.lease, resultJSON: result))
        }
        return job.lease.id
    }

    @Test("kiroku_viewer reads aggregates only (not a job, an image, a result or a pair) and changes nothing; its minutes and failure categories count")
    func viewerRole() throws {
        let (_, admin, _, viewer) = try Self.database()
        _ = try admin.enqueue(NewJob(image: .inline(fakeJPEG("v")), pool: "cpu"))
        for statement in ["SELECT * FROM kiroku.jobs", "SELECT * FROM kiroku.job_images", "SELECT * FROM kiroku.shadow_pairs",
                          "SELECT * FROM kiroku.workers", "SELECT * FROM kiroku.recommendations",
                          "SELECT kiroku.enqueue_uri('https://example.com/a.jpg')", "SELECT * FROM kiroku.claim('w', 'cpu', 1, '1 minute', 1000)",
                          "SELECT kiroku.set_shadow(1, 'cpu', 'gpu')", "INSERT INTO kiroku.jobs (image_uri) VALUES ('https://example.com/a.jpg')",
                          "UPDATE kiroku.routes SET weight = 0", "SELECT kiroku.requeue(1)", "SELECT kiroku.register_worker('w', 'h', 'cpu', 'm', 1, 'v')"] {
            #expect(throws: PostgresError.self, "\(statement)") { try viewer.query(statement) }
        }
        try Self.finish(admin, pool: "cpu", worker: "w", error: "decode: not a JPEG")
        _ = try admin.enqueue(NewJob(image: .inline(fakeJPEG("w")), pool: "cpu"))
        try Self.finish(admin, pool: "cpu", worker: "w")
        let queue = JobQueue(connection: viewer)
        #expect(try queue.poolMeasurements(shortWindow: 60, longWindow: 900, liveness: 90).map(\.ready) == [0])
        #expect(try queue.poolDepths().isEmpty && queue.shadowSummary().compared == 0 && queue.workerSummaries().isEmpty)
        let (now, closed) = try queue.minuteBoundary(settle: 5)
        #expect(closed <= now.addingTimeInterval(-5) && closed > now.addingTimeInterval(-66))
        let around = (from: now.addingTimeInterval(-120), to: now.addingTimeInterval(60))
        let minutes = try queue.finishedMinutes(from: around.from, to: around.to)
        #expect(minutes.reduce(0) { $0 + $1.succeeded } == 1 && minutes.reduce(0) { $0 + $1.failed } == 1, "\(minutes)")
        let failures = try queue.failureMinutes(from: around.from, to: around.to)
        #expect(failures.map(\.category) == ["decode: not a JPEG"] && failures.map(\.kind) == ["permanent"], "\(failures)")
        #expect(try queue.finishedMinutes(from: now.addingTimeInterval(60), to: now.addingTimeInterval(120)).isEmpty)
        #expect(try queue.latestFinished().map(\.state) == ["succeeded", "failed"])
    }

    @Test("the JSON API: pools, workers with their model's hash, the latest jobs with failure categories, never a URI; a token guards every path")
    func api() async throws {
        let (_, admin, viewerURL, _) = try Self.database()
        let secret = "sig=SECRET-\(UUID().uuidString.prefix(6))"
        let failing = try admin.enqueue(NewJob(image: .uri("https://images.example/photo.jpg?" + secret), pool: "cpu"))
        for tag in ["a", "b"] { _ = try admin.enqueue(NewJob(image: .inline(fakeJPEG(tag)), pool: "cpu")) }
        let hash = String(repeating: "0f", count: 32)
        try admin.registerWorker(id: "host-a/1", host: "host-a", pool: "cpu", model: "lite0", modelSHA256: hash, cores: 4, version: "t")
        try admin.reportWorkerSpeed(id: "host-a/1", instanceType: "c5.xlarge", imagesPerSecond: 21.5)
        try Self.finish(admin, pool: "cpu", worker: "host-a/1", error: "fetch: refused")
        try Self.finish(admin, pool: "cpu", worker: "host-a/1")

        let tokenFile = NSTemporaryDirectory() + "kiroku-token-\(UUID().uuidString.prefix(6))"
        let token = "t0k3n-" + UUID().uuidString
        try token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        let (dashboard, address) = try await Self.start(["--token-file", tokenFile], databaseURL: viewerURL)
        defer { dashboard.signal(SIGTERM) }

        for (path, authorization) in [("", nil), ("api/dashboard", nil), ("api/dashboard", "Bearer wrong-token-0123456789"),
                                      ("no-such-page", nil), ("api/dashboard", "Basic " + Data("x:wrong".utf8).base64EncodedString()),
                                      ("api/dashboard", "Bearer " + token + "x"), ("api/dashboard", token)] {
            let refused = try await Self.get(address, path, authorization: authorization)
            #expect(refused.status == 401 && refused.body.isEmpty, "/\(path) with \(authorization ?? "no token"): \(refused.status)")
            #expect(refused.headers["www-authenticate"]?.contains("Basic") == true)
        }
        let page = try await Self.get(address, "", authorization: "Basic " + Data("anyone:\(token)".utf8).base64EncodedString())
        #expect(page.status == 200 && page.body.contains("<script src=\"/dashboard.js\">"))
        #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        #expect(page.headers["cache-control"] == "no-store")
        let missing = try await Self.get(address, "no-such-page", authorization: "Bearer " + token)
        #expect(missing.status == 404 && missing.headers["content-security-policy"] != nil && missing.headers["cache-control"] == "no-store")

        let api = try await Self.get(address, "api/dashboard", authorization: "Bearer " + token)
        #expect(api.status == 200)
        #expect(!api.body.contains(secret) && !api.body.contains("images.example"), "no URI in the API")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(api.body.utf8)) as? [String: Any])
        let pools = try #require(json["pools"] as? [[String: Any]])
        let cpu = try #require(pools.first { $0["pool"] as? String == "cpu" })
        #expect(cpu["ready"] as? Int == 1 && cpu["running"] as? Int == 0 && cpu["live_hosts"] as? Int == 1, "\(cpu)")
        // The advisor's own measurement of the pool, the typed row `status` and the advisor read.
        let measurement = try #require(cpu["measurement"] as? [String: Any])
        #expect(measurement["ready"] as? Int == 1 && measurement["long_arrivals"] as? Int == 3 && measurement["live_workers"] as? Int == 1, "\(measurement)")
        #expect(abs((cpu["arrivals_long"] as? Double ?? 0) - 3.0 / 900) < 1e-9, "\(cpu)")
        let latest = try #require(json["latest"] as? [[String: Any]])
        #expect(latest.map { $0["state"] as? String } == ["succeeded", "failed"] && latest[1]["id"] as? Int == Int(failing))
        #expect(latest[1]["category"] as? String == "fetch: refused", "\(latest)")
        let worker = try #require((json["workers"] as? [[String: Any]])?.first)
        #expect(worker["model_sha256"] as? String == hash && worker["cores"] as? Int == 4 && worker["images_per_second"] as? Double == 21.5)
        let cutover = try #require(json["cutover"] as? [String: Any])
        #expect(cutover["from"] as? String == "gpu" && cutover["to"] as? String == "cpu")
        let health = try #require(json["health"] as? [[String: Any]])
        #expect(health.map { $0["name"] as? String } == ["migrations", "oldest-transaction", "dead-tuples", "runnable-index", "stranded-leases",
                                                          "idle-in-transaction-timeout"])
        #expect(health.filter { ($0["evidence"] as? String ?? "").hasPrefix("not checked") }.isEmpty, "the viewer may run every check: \(health)")
    }

    @Test("refused at start: a non-loopback address without a token, a short token, a malformed address; without a token, non-loopback Host headers")
    func refusals() async throws {
        let shortToken = NSTemporaryDirectory() + "kiroku-short-\(UUID().uuidString.prefix(6))"
        try "short".write(toFile: shortToken, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: shortToken) }
        let url = try TestDatabase.create()
        for (arguments, message) in [(["--listen", "0.0.0.0:0"], "--token-file"), (["--listen", "127.evil.example:0"], "--token-file"),
                                     (["--token-file", shortToken], "at least 16"),
                                     (["--listen", "localhost"], "is not HOST:PORT"), (["--from", "cpu"], "same pool")] {
            let run = try await KirokuProcess.run(["dashboard"] + arguments, databaseURL: url)
            #expect(run.status != 0 && run.stderr.contains(message), "\(arguments): \(run.stderr)")
        }
        // Without a token, a request must name a loopback host: a page whose name was rebound to
        // 127.0.0.1 gets nothing.
        let (dashboard, address) = try await Self.start([], databaseURL: url)
        defer { dashboard.signal(SIGTERM) }
        let port = try #require(URLComponents(string: address)?.port)
        for (host, status) in [("attacker.example:\(port)", 403), ("127.0.0.1.attacker.example", 403), ("localhost:\(port)", 200),
                               ("127.0.0.1:\(port)", 200)] {
            var request = HTTPClientRequest(url: address + "api/dashboard")
            request.headers.replaceOrAdd(name: "Host", value: host)
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 4 << 20)
            #expect(Int(response.status.code) == status && (status == 200 || body.readableBytes == 0), "Host: \(host)")
        }
    }

    @Test("in Chromium: renders with no console errors, a finished job shows within 2 s, stopped workers go, no overflow at 390 px")
    func browser() async throws {
        let (_, admin, viewerURL, _) = try Self.database()
        for tag in ["a", "b", "c"] { _ = try admin.enqueue(NewJob(image: .inline(fakeJPEG(tag)), pool: "cpu")) }
        try admin.registerWorker(id: "host-b/1", host: "host-b", pool: "cpu", model: "lite0", modelSHA256: String(repeating: "1e", count: 32),
                                 cores: 2, version: "t")
        let (dashboard, address) = try await Self.start([], databaseURL: viewerURL)
        defer { dashboard.signal(SIGTERM) }
        let browser = try await Browser()
        var failed = false
        func check(_ condition: Bool, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) async {
            #expect(condition, comment, sourceLocation: sourceLocation)
            guard !condition, !failed, let png = try? await browser.screenshot() else { return }
            failed = true
            Attachment.record(png, named: "dashboard.png", sourceLocation: sourceLocation)
        }
        do {
            try await browser.setViewport(width: 1280, height: 900)
            try await browser.open(address)
            let rendered = #"document.querySelector('[data-pool="cpu"] [data-fact="depth"]')?.textContent === '3 / 0 / 0'"#
            await check(try await browser.waitUntil(rendered, timeout: .seconds(10)) != nil, "the pool's depth")
            await check(try await browser.evaluate(#"!!document.querySelector('[data-worker="host-b/1"]')"#) as? Bool == true, "the live worker")
            await check(try await browser.evaluate("document.querySelectorAll('[data-job]').length") as? Int == 0, "no job finished yet")

            let job = try Self.finish(admin, pool: "cpu", worker: "host-b/1")
            let shown = try await browser.waitUntil(#"!!document.querySelector('[data-job="\#(job)"]')"#, timeout: .seconds(2))
            await check(shown != nil, "a job finished while the page is open appears within 2 s")

            try admin.deregisterWorker(id: "host-b/1")
            let gone = try await browser.waitUntil(#"!document.querySelector('[data-worker="host-b/1"]') && document.querySelector('[data-pool="cpu"] [data-fact="live"]')?.textContent === '0'"#,
                                                   timeout: .seconds(5))
            await check(gone != nil, "a pool whose workers all stop shows them gone")

            try await browser.setViewport(width: 390, height: 844)
            let fits = try await browser.waitUntil("document.documentElement.scrollWidth <= document.documentElement.clientWidth", timeout: .seconds(3))
            let widths = try await browser.evaluate("document.documentElement.scrollWidth + ' of ' + document.documentElement.clientWidth") as? String
            await check(fits != nil, "no horizontal overflow at 390 px: \(widths ?? "?")")
            await check(browser.consoleErrors.isEmpty, "console errors: \(browser.consoleErrors)")
        } catch {
            await check(false, "\(error)")
        }
        await browser.close()
    }
}
