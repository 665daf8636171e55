import Foundation

/// The `kiroku` executable, run as a user would run it.
public struct KirokuProcess {
    /// What a run printed and how it exited.
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// The built binary: KIROKU_BIN, else `kiroku` beside the test bundle.
    public static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["KIROKU_BIN"] { return URL(fileURLWithPath: path) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("kiroku")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        struct Missing: Error, CustomStringConvertible { let description = "the kiroku binary was not found: run `make test` (it builds it)" }
        throw Missing()
    }

    /// Runs kiroku with `arguments`, the database URL in KIROKU_DATABASE_URL, `stdin` as input,
    /// and `environment` set on top of this process's; waits for it to exit (killing it after 10
    /// minutes) without holding a thread of the concurrency pool, which the tests running beside it
    /// need (a blocked pool once timed out the image fetcher's loopback requests).
    public static func run(_ arguments: [String], databaseURL: String? = nil, stdin: String? = nil,
                           environment overrides: [String: String] = [:]) async throws -> Output {
        try await ChildProcess(arguments, databaseURL: databaseURL, stdin: stdin, environment: overrides).wait(timeout: .seconds(600))
    }
}

/// A process the tests started (kiroku, or another program), its output collected as it comes.
public final class ChildProcess: @unchecked Sendable {
    private let process: Process
    private let lock = NSLock()
    private var stdoutData = Data(), stderrData = Data()
    private let readers = DispatchGroup()

    /// Starts `executable` with `arguments`, `environment` (nil: this process's) and `stdin` as its
    /// input (nil: empty).
    public init(executable: URL, arguments: [String], environment: [String: String]? = nil, stdin: String? = nil) throws {
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let out = Pipe(), err = Pipe(), input = stdin.map { _ in Pipe() }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input ?? FileHandle.nullDevice
        try process.run()
        collect(out.fileHandleForReading) { self.stdoutData.append($0) }
        collect(err.fileHandleForReading) { self.stderrData.append($0) }
        if let stdin, let input {
            Self.write(Array(stdin.utf8), to: input.fileHandleForWriting.fileDescriptor)
            try input.fileHandleForWriting.close()
        }
    }

    /// Starts kiroku with `arguments`, the database URL in KIROKU_DATABASE_URL, `stdin` as its
    /// input (nil: empty), and `environment` set on top of this process's.
    public convenience init(_ arguments: [String], databaseURL: String?, stdin: String? = nil, environment extra: [String: String] = [:]) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["KIROKU_DATABASE_URL"] = databaseURL
        for name in ["DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"] { environment[name] = nil }
        environment.merge(extra) { $1 }
        try self.init(executable: try KirokuProcess.binary(), arguments: arguments, environment: environment, stdin: stdin)
    }

    /// Reads `handle` to its end on a thread of its own, with read(2) rather than FileHandle's
    /// reads, which stop the whole test process (fatalError) on any read error: an interrupted read
    /// is retried, another error ends the output there.
    private func collect(_ handle: FileHandle, into append: @escaping @Sendable (Data) -> Void) {
        readers.enter()
        Thread {
            withExtendedLifetime(handle) {
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    self.lock.withLock { append(Data(buffer[..<count])) }
                }
            }
            self.readers.leave()
        }.start()
    }

    /// Writes all of `bytes` to `fd` with write(2), retrying interrupted writes; stops early if the
    /// process closed its input (it has what it read; its exit status tells the rest).
    private static func write(_ bytes: [UInt8], to fd: Int32) {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            written += count
        }
    }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// What it has written to standard error so far.
    public var stderr: String { lock.withLock { String(decoding: stderrData, as: UTF8.self) } }

    /// Sends a signal (SIGTERM, SIGKILL, ...) while the process runs (never to a reused pid).
    public func signal(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits until standard error contains `text`; false if the process exits or `timeout` passes first.
    /// Polls with `Task.sleep`, so the waiting test holds no thread.
    public func waitForLog(_ text: String, timeout: Duration = .seconds(120)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return stderr.contains(text)
    }

    /// Waits for the process to exit (killing it after `timeout`) and returns what it printed.
    /// Polls with `Task.sleep` and is resumed when the output readers finish, so it holds no thread.
    public func wait(timeout: Duration = .seconds(180)) async -> KirokuProcess.Output {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { signal(SIGKILL) }
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        await readers.finished()
        return lock.withLock {
            KirokuProcess.Output(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                                 stderr: String(decoding: stderrData, as: UTF8.self))
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
