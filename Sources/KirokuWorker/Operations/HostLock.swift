import Foundation

/// The host-level lock that keeps one worker process per host: an exclusive flock(2) on a file,
/// held for the life of the process and released by the kernel however the process ends.
public final class HostLock: Sendable {
    /// The lock file's path.
    public let path: String
    private let descriptor: Int32

    /// Takes the lock, or throws naming the process that holds it.
    public init(path: String) throws(HostLockError) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw HostLockError(message: "cannot open the host lock file \(path): \(String(cString: strerror(errno))); set another with --lock-file")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readHolder(descriptor)
            close(descriptor)
            throw HostLockError(message: "another kiroku worker\(holder.map { " (pid \($0))" } ?? "") already runs on this host: it holds \(path). One worker per host uses every core; stop it first, or give each worker its own --lock-file only when you mean to run several on one machine (tests)")
        }
        ftruncate(descriptor, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(descriptor, $0, strlen($0)) }
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    private static func readHolder(_ descriptor: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}

/// The host lock is held by another process (or cannot be opened).
public struct HostLockError: Error, CustomStringConvertible, Sendable {
    /// What happened and what to do.
    public let message: String
    public var description: String { message }
}
