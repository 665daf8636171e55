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

    /// Runs kiroku with `arguments`, the database URL in KIROKU_DATABASE_URL, `stdin` as input.
    public static func run(_ arguments: [String], databaseURL: String? = nil, stdin: String? = nil) throws -> Output {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["KIROKU_DATABASE_URL"] = databaseURL
        for name in ["DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"] { environment[name] = nil }
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
