import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("The HTML report")
struct HTMLReportTests {
    /// Runs headless Chromium (Debian's package, installed by `make setup`).
    static func chromium(_ arguments: [String]) throws -> (status: Int32, output: String) {
        guard let binary = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            struct Missing: Error, CustomStringConvertible { let description = "chromium is not installed: run `make setup`" }
            throw Missing()
        }
        let profile = "--user-data-dir=" + NSTemporaryDirectory() + "kiroku-chromium-\(UUID().uuidString.prefix(6))"
        let run = try ChildProcess(executable: URL(fileURLWithPath: binary),
                                   arguments: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", profile] + arguments)
            .wait(timeout: .seconds(300))
        return (run.status, run.stdout)
    }

    @Test("rendered from a real database after worker, autoscaler and shadow runs: Chromium opens it offline, every chart is drawn")
    func rendered() throws {
        let url = try TestDatabase.create()
        let root = SizingRuleTests.root
        let photos = root.appendingPathComponent(".kiroku/vision-fixtures/photos").path
        let model = root.appendingPathComponent("models/efficientnet-lite0.onnx").path
        let catalog = root.appendingPathComponent("catalog/instances.json").path
        // Every job shadowed: the agreement chart needs at least one pair, and a 30% sample of the
        // 17 photos came out empty once in CI (0.7^17, about 1 run in 430).
        #expect(try KirokuProcess.run(["shadow", "set", "100%"], databaseURL: url).status == 0)
        #expect(try KirokuProcess.run(["enqueue", "--no-idempotency-key", "--pool", "cpu", photos], databaseURL: url).status == 0)
        for pool in ["cpu", "gpu"] {
            let lock = NSTemporaryDirectory() + "kiroku-html-\(pool)-\(UUID().uuidString.prefix(6)).lock"
            #expect(try KirokuProcess.run(["worker", "--once", "--pool", pool, "--http-port", "0", "--lock-file", lock, "--model", model,
                                           "--instance-type", "c5.xlarge"], databaseURL: url).status == 0)
        }
        let autoscaler = try ChildProcess(["autoscaler", "--interval", "200ms", "--http-port", "0", "--catalog", catalog], databaseURL: url)
        let connection = try PostgresConnection(url)
        for _ in 0..<100 where try connection.query("SELECT count(*) AS n FROM kiroku.recommendations").single("n").int("n") < 2 {
            Thread.sleep(forTimeInterval: 0.1)
        }
        autoscaler.signal(SIGTERM)
        _ = autoscaler.wait()

        let page = NSTemporaryDirectory() + "kiroku-advice-\(UUID().uuidString.prefix(6)).html"
        let screenshot = page.replacingOccurrences(of: ".html", with: ".png")
        defer {
            try? FileManager.default.removeItem(atPath: page)
            try? FileManager.default.removeItem(atPath: screenshot)
        }
        let advise = try KirokuProcess.run(["advise", "--html", page, "--catalog", catalog], databaseURL: url)
        #expect(advise.status == 0, "\(advise.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"), "self-contained, no network")

        let dom = try Self.chromium(["--dump-dom", "file://" + page])
        #expect(dom.status == 0)
        #expect(dom.output.components(separatedBy: "<figure class=\"chart\">").count - 1 == 5, "five charts")
        #expect(dom.output.components(separatedBy: "class=\"series\"").count - 1 >= 7, "lines drawn: arrivals, depth, hosts, latency, agreement")
        #expect(!dom.output.contains("no data yet"), "every chart has data")

        let shot = try Self.chromium(["--screenshot=" + screenshot, "--window-size=1300,1400", "file://" + page])
        #expect(shot.status == 0)
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000, "a rendered page, \(png.count) bytes")
    }
}
