import ArgumentParser
import Foundation
import KirokuQueue
import KirokuSupport
import KirokuVision

/// `kiroku enqueue`: bulk-enqueues image files.
struct Enqueue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enqueue image files for classification.",
        discussion: """
            PATH may be a file, a directory (searched recursively) or - to read paths from standard \
            input, one per line. Files that are not JPEG are reported and skipped unless \
            --no-validate. Each job's idempotency key is the file's SHA-256 with the request's model, \
            pool and (with --uri) URI, so the same request for a file already waiting or running is \
            not queued twice.
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "Files, directories, or - for a list of paths on standard input.")
    var paths: [String]

    @Option(help: "Model name the jobs ask for.")
    var model: String = "default"

    @Option(help: "Pool that should run the jobs (default: chosen by the queue).")
    var pool: String?

    @Option(help: "Priority: higher runs first.")
    var priority: Int = 0

    @Flag(help: "Enqueue file:// URIs for workers that share the file system, instead of the bytes.")
    var uri = false

    @Flag(help: "Enqueue files even when they do not look like JPEG.")
    var noValidate = false

    @Flag(help: "Do not deduplicate by content hash.")
    var noIdempotencyKey = false

    @Option(help: "Jobs per statement.")
    var batchSize: Int = 500

    @Flag(help: "Then wait for the jobs' results and print each as it finishes: exit 0 when all succeeded, 1 when any failed, 3 on timeout.")
    var wait = false

    @Option(help: "With --wait: give up after this long, e.g. 30s, 10m (default: wait as long as it takes).", transform: DurationArgument.parse)
    var timeout: DurationArgument?

    @Option(help: "With --wait: table (for people), json (one object per line) or csv.")
    var format: Results.Format = .table

    func validate() throws {
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
        guard !paths.isEmpty else { throw ValidationError("give at least one PATH") }
        if !wait && (timeout != nil || format != .table) { throw ValidationError("--timeout and --format go with --wait") }
        if let timeout, timeout.duration <= .zero { throw ValidationError("--timeout must be longer than zero") }
    }

    func run() throws {
        let files = try ImageFileList.collect(paths)
        let queue = try database.queue()
        if wait { try queue.listenForResults() }
        var waitFor: [Int64] = []
        let progress = ProgressLine(total: files.count, label: "enqueued")
        var created: [Int64] = []
        var existing = 0
        var skipped = 0
        var batch: [NewJob] = []
        var batchBytes = 0

        func flush() throws {
            guard !batch.isEmpty else { return }
            for job in try queue.enqueue(batch: batch) {
                if job.created { created.append(job.id) } else { existing += 1 }
                waitFor.append(job.id)
            }
            progress.advance(by: batch.count)
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }

        for file in files {
            let bytes: [UInt8]
            do {
                bytes = Array(try Data(contentsOf: file))
            } catch {
                throw UsageError(description: "cannot read \(file.path): \(error.localizedDescription)")
            }
            let format = ImageFormat(sniffing: bytes)
            if !noValidate, format != .jpeg {
                progress.interrupt()
                printError("skipped \(file.path): not a JPEG (it is \(format.description))")
                progress.advance(by: 1)
                skipped += 1
                continue
            }
            let image: ImageSource = uri ? .uri(file.absoluteURL.absoluteString) : .inline(bytes)
            batch.append(NewJob(image: image, model: model, priority: priority, pool: pool,
                                idempotencyKey: noIdempotencyKey ? nil : idempotencyKey(bytes, image)))
            batchBytes += uri ? 0 : bytes.count
            if batch.count >= batchSize || batchBytes >= 64 << 20 { try flush() }
        }
        try flush()
        progress.finish()

        let range = created.count == 1 ? " (id \(created[0]))" : created.isEmpty ? "" : " (ids \(created.min()!)–\(created.max()!))"
        let summary = "enqueued \(created.count) \(created.count == 1 ? "job" : "jobs")\(range)"
            + (existing > 0 ? "; \(existing) already queued with the same content" : "")
            + (skipped > 0 ? "; skipped \(skipped) not JPEG" : "")
        guard wait else {
            print(summary)
            return
        }
        printError(summary + "; waiting for the results")
        try ResultWaiter(queue: queue, format: format, timeout: timeout?.duration).wait(for: waitFor)
    }

    /// A key names one request (the queue refuses a key reused for another): the content's
    /// SHA-256, then a digest of the model, the pool and the URI the job asks for.
    private func idempotencyKey(_ bytes: [UInt8], _ image: ImageSource) -> String {
        let uri = if case .uri(let uri) = image { uri } else { "" }
        let request = SHA256.hex(Array("\(model)\n\(pool ?? "")\n\(uri)".utf8))
        return "sha256:" + SHA256.hex(bytes) + "/" + request.prefix(16)
    }
}

/// Expands command-line paths into the image files to enqueue.
enum ImageFileList {
    /// Files named directly, found under directories (recursively, sorted), or listed on stdin
    /// for "-". A path that does not exist is a usage error naming it.
    static func collect(_ paths: [String]) throws -> [URL] {
        var files: [URL] = []
        for path in paths {
            if path == "-" {
                while let line = readLine() {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    if !trimmed.isEmpty { files += try collect([trimmed]) }
                }
                continue
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw UsageError(description: "no such file or directory: \(path)")
            }
            let url = URL(fileURLWithPath: path)
            guard isDirectory.boolValue else {
                files.append(url)
                continue
            }
            let found = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])?
                .compactMap { $0 as? URL }
                .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true } ?? []
            files += found.sorted { $0.path < $1.path }
        }
        return files
    }
}

/// A one-line progress counter on standard error, shown only when it is a terminal.
final class ProgressLine {
    private let total: Int
    private let label: String
    private var done = 0
    private let enabled = isatty(STDERR_FILENO) == 1

    init(total: Int, label: String) {
        self.total = total
        self.label = label
    }

    /// Counts `count` more items done and redraws.
    func advance(by count: Int) {
        done += count
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(done)/\(total)".utf8))
    }

    /// Clears the line so another message can be printed.
    func interrupt() {
        if enabled { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    /// Ends the progress line.
    func finish() {
        if enabled && done > 0 { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
