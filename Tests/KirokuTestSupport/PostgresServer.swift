import Foundation

/// A PostgreSQL server of a test's own (initdb and pg_ctl on a free loopback port, removed on
/// deinit), for tests that stop and start the server, which the shared server of
/// scripts/with-postgres.sh must not do under other tests. As root it runs as the postgres user.
public final class PostgresServer: @unchecked Sendable {
    /// The port it listens on (127.0.0.1 only).
    public let port: Int
    private let directory: String
    private let bindir: String

    /// Initialises a cluster and starts it.
    public init() throws {
        bindir = try Self.findBindir()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try freePort()
        if getuid() == 0 { try Self.shell("/bin/chown", ["-R", "postgres:", directory]) }
        try serverCommand("initdb", ["-D", "\(directory)/data", "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"])
        try start()
    }

    /// A superuser URL to the postgres database.
    public var url: String { "postgresql://postgres@127.0.0.1:\(port)/postgres" }

    /// Starts the server (waits until it accepts connections).
    public func start() throws {
        try serverCommand("pg_ctl", ["-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60",
                                     "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c fsync=off", "start"])
    }

    /// Stops the server (fast mode: sessions are disconnected, as in a restart).
    public func stop() throws {
        try serverCommand("pg_ctl", ["-D", "\(directory)/data", "-m", "fast", "-w", "stop"])
    }

    deinit {
        try? serverCommand("pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func serverCommand(_ tool: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            try Self.shell("/usr/sbin/runuser", ["-u", "postgres", "--", "\(bindir)/\(tool)"] + arguments)
        } else {
            try Self.shell("\(bindir)/\(tool)", arguments)
        }
    }

    /// The directory of the newest installed PostgreSQL's programs (initdb, pg_ctl, pg_dump).
    public static func findBindir() throws -> String {
        let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .sorted { $0.compare($1, options: .numeric) == .orderedDescending }
            .map { "/usr/lib/postgresql/\($0)/bin" }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") }) else {
            throw Failure(description: "initdb not found under /usr/lib/postgresql: run `make setup`")
        }
        return found
    }

    /// Runs a tool with posix_spawn, its output to a file. Not Foundation's Process: on Linux it
    /// learns of the child's exit through a descriptor the child inherits, which the server that
    /// pg_ctl starts inherits too and keeps open, so the wait would never end.
    private static func shell(_ executable: String, _ arguments: [String]) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-pg-\(UUID().uuidString.prefix(8)).out").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
public func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound else { throw PostgresServer.Failure(description: "no free port: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}
