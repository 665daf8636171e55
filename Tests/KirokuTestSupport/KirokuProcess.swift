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
    /// and `environment` set on top of this process's.
    public static func run(_ arguments: [String], databaseURL: String? = nil, stdin: String? = nil,
                           environment overrides: [String: String] = [:]) throws -> Output {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["KIROKU_DATABASE_URL"] = databaseURL
        for name in ["DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"] { environment[name] = nil }
        environment.merge(overrides) { _, new in new }
        process.environment = environment
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// A `kiroku` process left running (a worker), its output collected as it comes.
public final class RunningKiroku: @unchecked Sendable {
    private let process: Process
    private let lock = NSLock()
    private var stdoutData = Data(), stderrData = Data()
    private let readers = DispatchGroup()

    /// Starts kiroku with `arguments` and the database URL in KIROKU_DATABASE_URL.
    public init(_ arguments: [String], databaseURL: String?, environment extra: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = try KirokuProcess.binary()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["KIROKU_DATABASE_URL"] = databaseURL
        for name in ["DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"] { environment[name] = nil }
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        collect(out.fileHandleForReading) { self.stdoutData.append($0) }
        collect(err.fileHandleForReading) { self.stderrData.append($0) }
    }

    private func collect(_ handle: FileHandle, into append: @escaping @Sendable (Data) -> Void) {
        readers.enter()
        Thread {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                self.lock.withLock { append(chunk) }
            }
            self.readers.leave()
        }.start()
    }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// What it has written to standard error so far.
    public var stderr: String { lock.withLock { String(decoding: stderrData, as: UTF8.self) } }

    /// Sends a signal (SIGTERM, SIGKILL, ...).
    public func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits until standard error contains `text`; false if the process exits or `timeout` passes first.
    public func waitForLog(_ text: String, timeout: Duration = .seconds(120)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// Waits for the process to exit (killing it after `timeout`) and returns what it printed.
    public func wait(timeout: Duration = .seconds(180)) -> KirokuProcess.Output {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { signal(SIGKILL) }
        process.waitUntilExit()
        readers.wait()
        return lock.withLock {
            KirokuProcess.Output(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                                 stderr: String(decoding: stderrData, as: UTF8.self))
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
