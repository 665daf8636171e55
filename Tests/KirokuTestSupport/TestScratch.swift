import Foundation

/// One directory per test process for the files tests hand to workers and browsers (host lock
/// files, Chromium profiles), removed when the process exits: a run leaves nothing in /tmp.
public enum TestScratch {
    /// The directory, created on first use.
    public static let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kiroku-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestScratch.directory) }
        return url
    }()

    /// A path in the directory no other caller gets: `prefix`, a random part, then `suffix`.
    public static func path(_ prefix: String, suffix: String = "") -> String {
        directory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))\(suffix)").path
    }
}
