import ArgumentParser
import Foundation
import KirokuQueue

/// `kiroku enqueue --wait`: prints each job's result as it finishes (announced on the results
/// channel, with a sweep every few seconds for jobs finished unannounced), a progress bar on a
/// terminal, and exits 0 when all succeeded, 1 when any did not, 3 on timeout.
struct ResultWaiter {
    let queue: JobQueue
    let format: Results.Format
    let timeout: Duration?

    /// Seconds between sweeps of every pending job.
    static let sweepInterval: Duration = .seconds(5)

    /// The exit code on timeout.
    static let timedOut: Int32 = 3

    /// Fixed widths: a streamed table cannot be aligned on rows not yet seen.
    private static let widths = [8, 24, 10, 9, 24, 6, 6, 0]

    func wait(for ids: [Int64]) throws {
        var pending = Set(ids)
        let progress = ProgressLine(total: ids.count, label: "finished")
        let deadline = timeout.map { ContinuousClock.now.advanced(by: $0) }
        var failed = 0
        switch format {
        case .csv: print(JobQueue.resultColumns.joined(separator: ","))
        case .table: print(Self.line(Results.tableHeader))
        case .json: break
        }
        var check = Array(pending)
        while !pending.isEmpty {
            for row in try queue.finishedJobs(check) {
                let id = try row.int("id")
                guard pending.remove(id) != nil else { continue }
                if try row.string("state") != "succeeded" { failed += 1 }
                progress.interrupt()
                let fields = try JobFields(row: row, columns: JobQueue.resultColumns)
                switch format {
                case .json: print(fields.json)
                case .csv: print(fields.csv)
                case .table: print(Self.line(try Results.tableRow(row)))
                }
                fflush(nil)  // each result as it finishes, even into a pipe
                progress.advance(by: 1)
            }
            guard !pending.isEmpty else { break }
            var wait = Self.sweepInterval
            if let deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                guard remaining > .zero else {
                    progress.finish()
                    printError("timed out with \(pending.count) of \(ids.count) jobs still pending: " + Self.list(pending.sorted()))
                    throw ExitCode(Self.timedOut)
                }
                wait = min(wait, remaining)
            }
            let announced = try queue.waitForFinished(timeout: wait)
            // Announced ids are read at once; when none came, every pending job is swept.
            check = announced.isEmpty ? Array(pending) : announced.filter(pending.contains)
        }
        progress.finish()
        if failed > 0 {
            printError("\(failed) of \(ids.count) jobs did not succeed")
            throw ExitCode.failure
        }
    }

    private static func line(_ cells: [String]) -> String {
        var text = ""
        for (cell, width) in zip(cells, widths) {
            let fitted = width == 0 || cell.count < width ? cell : String(cell.prefix(width - 2)) + "~"
            text += width == 0 ? fitted : fitted.padding(toLength: width, withPad: " ", startingAt: 0) + " "
        }
        return text.trimmingCharacters(in: .whitespaces)
    }

    private static func list(_ ids: [Int64]) -> String {
        ids.prefix(20).map(String.init).joined(separator: ", ") + (ids.count > 20 ? " and \(ids.count - 20) more" : "")
    }
}
