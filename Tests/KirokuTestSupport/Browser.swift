import Foundation

/// Headless Chromium (Debian's package, installed by `make setup`) driven over the DevTools
/// protocol on a pipe (`--remote-debugging-pipe`: requests on its fd 3, replies and events on its
/// fd 4, each a JSON text ending in NUL), so a test can watch a live page: evaluate script in it,
/// set its viewport, collect its console errors and take screenshots. No WebSocket, no port.
public final class Browser: @unchecked Sendable {
    /// A DevTools command that failed or went unanswered.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String

        /// A failure saying `description`.
        public init(description: String) { self.description = description }
    }

    private let pid: pid_t
    private let toBrowser: Int32
    private let lock = NSLock()
    private var replies: [Int: Data] = [:]
    private var events: [(method: String, params: [String: Any])] = []
    private var nextID = 0
    private var session: String?
    private let profile: String

    /// Starts Chromium with an empty page and attaches to it.
    public init() async throws {
        guard let binary = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw Failure(description: "chromium is not installed: run `make setup`")
        }
        profile = NSTemporaryDirectory() + "kiroku-browser-\(UUID().uuidString.prefix(8))"
        var requests: [Int32] = [0, 0], answers: [Int32] = [0, 0]
        guard pipe(&requests) == 0, pipe(&answers) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, requests[0], 3)
        posix_spawn_file_actions_adddup2(&actions, answers[1], 4)
        let arguments = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
                         "--user-data-dir=" + profile, "about:blank"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, binary, &actions, nil, &argv, environ)
        Glibc.close(requests[0])
        Glibc.close(answers[1])
        guard spawned == 0 else { throw Failure(description: "posix_spawn chromium: \(String(cString: strerror(spawned)))") }
        (pid, toBrowser) = (child, requests[1])
        let fromBrowser = answers[0]
        Thread { [self] in readMessages(fromBrowser) }.start()
        let target = try await send("Target.createTarget", ["url": "about:blank"])
        let attached = try await send("Target.attachToTarget", ["targetId": target["targetId"] as? String ?? "", "flatten": true])
        lock.withLock { session = attached["sessionId"] as? String }
        for domain in ["Runtime", "Log", "Page"] { _ = try await send(domain + ".enable") }
    }

    /// Sends a command (to the page once attached) and waits for its reply's `result`.
    @discardableResult
    public func send(_ method: String, _ params: [String: Any] = [:], timeout: Duration = .seconds(30)) async throws -> [String: Any] {
        let (id, message) = try lock.withLock {
            nextID += 1
            var command: [String: Any] = ["id": nextID, "method": method, "params": params]
            if let session, !method.hasPrefix("Target.") { command["sessionId"] = session }
            return (nextID, try JSONSerialization.data(withJSONObject: command) + [0])
        }
        message.withUnsafeBytes { bytes in
            var written = 0
            while written < bytes.count {
                let count = write(toBrowser, bytes.baseAddress! + written, bytes.count - written)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                written += count
            }
        }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let reply = lock.withLock({ replies.removeValue(forKey: id) }) {
                let object = try JSONSerialization.jsonObject(with: reply) as? [String: Any] ?? [:]
                if let error = object["error"] { throw Failure(description: "\(method): \(error)") }
                return object["result"] as? [String: Any] ?? [:]
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw Failure(description: "\(method): no reply within \(timeout)")
    }

    /// Opens `url` in the page and waits for its load event.
    public func open(_ url: String) async throws {
        let loads = lock.withLock { events.filter { $0.method == "Page.loadEventFired" }.count }
        try await send("Page.navigate", ["url": url])
        let deadline = ContinuousClock.now + .seconds(30)
        while lock.withLock({ events.filter { $0.method == "Page.loadEventFired" }.count }) == loads {
            guard ContinuousClock.now < deadline else { throw Failure(description: "\(url) did not load within 30 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Evaluates `expression` in the page and returns its value as JSON would carry it (strings,
    /// numbers, booleans, arrays, objects); an exception thrown by it is an error.
    public func evaluate(_ expression: String) async throws -> Any? {
        let reply = try await send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = reply["exceptionDetails"] { throw Failure(description: "\(expression): \(exception)") }
        return (reply["result"] as? [String: Any])?["value"]
    }

    /// Waits until `expression` is true in the page; returns how long that took, or nil after `timeout`.
    public func waitUntil(_ expression: String, timeout: Duration) async throws -> Duration? {
        let start = ContinuousClock.now
        while start.duration(to: .now) < timeout {
            if try await evaluate(expression) as? Bool == true { return start.duration(to: .now) }
            try await Task.sleep(for: .milliseconds(25))
        }
        return nil
    }

    /// Lays the page out as a phone or a desktop of this width.
    public func setViewport(width: Int, height: Int) async throws {
        try await send("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600])
    }

    /// Errors the page reported: uncaught exceptions, console.error calls, and browser log errors
    /// (a failed request, a refused script or style).
    public var consoleErrors: [String] {
        lock.withLock {
            events.compactMap { event in
                switch event.method {
                case "Runtime.exceptionThrown":
                    return "exception: \((event.params["exceptionDetails"] as? [String: Any])?["text"] ?? event.params)"
                case "Runtime.consoleAPICalled" where event.params["type"] as? String == "error":
                    return "console.error: \(event.params["args"] ?? "")"
                case "Log.entryAdded":
                    let entry = event.params["entry"] as? [String: Any] ?? [:]
                    return entry["level"] as? String == "error" ? "log: \(entry["text"] ?? "") \(entry["url"] ?? "")" : nil
                default:
                    return nil
                }
            }
        }
    }

    /// A PNG of the page as it is now.
    public func screenshot() async throws -> [UInt8] {
        let shot = try await send("Page.captureScreenshot", ["format": "png"])
        guard let data = (shot["data"] as? String).flatMap({ Data(base64Encoded: $0) }) else { throw Failure(description: "no screenshot data") }
        return [UInt8](data)
    }

    /// Closes the browser and removes its profile.
    public func close() async {
        _ = try? await send("Browser.close", timeout: .seconds(5))
        Glibc.close(toBrowser)
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(5)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline { kill(pid, SIGKILL) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Reads NUL-terminated messages until the browser closes its end.
    private func readMessages(_ fd: Int32) {
        var pending = Data(), buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending.append(contentsOf: buffer[..<count])
            while let end = pending.firstIndex(of: 0) {
                let message = pending[pending.startIndex..<end]
                pending = Data(pending[(end + 1)...])
                guard let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any] else { continue }
                lock.withLock {
                    if let id = object["id"] as? Int {
                        replies[id] = Data(message)
                    } else if let method = object["method"] as? String {
                        events.append((method, object["params"] as? [String: Any] ?? [:]))
                    }
                }
            }
        }
        Glibc.close(fd)
    }
}
