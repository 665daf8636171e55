import Foundation
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("The HTML report", .subprocesses)
struct HTMLReportTests {
    /// Runs headless Chromium (Debian's package, installed by `make setup`).
    static func chromium(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        guard let binary = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            struct Missing: Error, CustomStringConvertible { let description = "chromium is not installed: run `make setup`" }
            throw Missing()
        }
        let profile = "--user-data-dir=" + TestScratch.path("chromium")
        let run = try await ChildProcess(executable: URL(fileURLWithPath: binary),
                                   arguments: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", profile] + arguments)
            .wait(timeout: .seconds(300))
        return (run.status, run.stdout)
    }

    @Test("rendered from a real database after worker, autoscaler and shadow runs: Chromium opens it offline, every chart is drawn")
    func rendered() async throws {
        let url = try TestDatabase.create()
        let root = SizingRuleTests.root
        let photos = root.appendingPathComponent(".kiroku/vision-fixtures/photos").path
        let model = root.appendingPathComponent("models/efficientnet-lite0.onnx").path
        let catalog = root.appendingPathComponent("catalog/instances.json").path
        // Every job shadowed: the agreement chart needs at least one pair, and a 30% sample of the
        // 17 photos came out empty once in CI (0.7^17, about 1 run in 430).
        #expect(try await KirokuProcess.run(["shadow", "set", "100%"], databaseURL: url).status == 0)
        #expect(try await KirokuProcess.run(["enqueue", "--no-idempotency-key", "--pool", "cpu", photos], databaseURL: url).status == 0)
        for pool in ["cpu", "gpu"] {
            let lock = TestScratch.path("html-\(pool)", suffix: ".lock")
            #expect(try await KirokuProcess.run(["worker", "--once", "--pool", pool, "--http-port", "0", "--lock-file", lock, "--model", model,
                                           "--instance-type", "c5.xlarge"], databaseURL: url).status == 0)
        }
        let autoscaler = try ChildProcess(["autoscaler", "--interval", "200ms", "--http-port", "0", "--catalog", catalog], databaseURL: url)
        let connection = try PostgresConnection(url)
        for _ in 0..<100 where try connection.query("SELECT count(*) AS n FROM kiroku.recommendations").single("n").int("n") < 2 {
            try await Task.sleep(for: .milliseconds(100))
        }
        autoscaler.signal(SIGTERM)
        _ = await autoscaler.wait()

        let page = NSTemporaryDirectory() + "kiroku-advice-\(UUID().uuidString.prefix(6)).html"
        let screenshot = page.replacingOccurrences(of: ".html", with: ".png")
        defer {
            try? FileManager.default.removeItem(atPath: page)
            try? FileManager.default.removeItem(atPath: screenshot)
        }
        #expect(try await KirokuProcess.run(["route", "set", "cpu=25", "gpu=75"], databaseURL: url).status == 0)
        let advise = try await KirokuProcess.run(["advise", "--plan", "--from", "gpu", "--from-type", "g4dn.xlarge", "--html", page, "--catalog", catalog],
                                           databaseURL: url)
        #expect(advise.status == 0, "\(advise.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"), "self-contained, no network")

        let dom = try await Self.chromium(["--dump-dom", "file://" + page])
        #expect(dom.status == 0)
        #expect(dom.output.components(separatedBy: "<figure class=\"chart\">").count - 1 == 7, "five charts over time, two of the plan")
        #expect(dom.output.components(separatedBy: "class=\"series\"").count - 1 >= 7, "lines drawn: arrivals, depth, hosts, latency, agreement")
        #expect(!dom.output.contains("no data yet"), "every chart has data")
        #expect(dom.output.components(separatedBy: "<section class=\"panel\">").count - 1 == 2, "a panel per pool")
        #expect(dom.output.contains("<h3>Pool gpu</h3>") && dom.output.contains("busy time of its jobs") == false, "gpu ran Kiroku workers here")
        // The plan's bars: five steps; the legacy pool has hosts in four, the new one in four.
        #expect(dom.output.components(separatedBy: "class=\"bar\"").count - 1 == 16, "hosts and cost bars per step and pool")
        #expect(dom.output.contains("Cut-over plan: gpu to cpu") && dom.output.contains("kiroku route set cpu=50 gpu=50"))
        // Fitted to the data: the jobs span about a minute, so the axis reads seconds, not three hours.
        #expect(dom.output.range(of: #">\d\d:\d\d:\d\d</text>"#, options: .regularExpression) != nil, "a clock with seconds on the time axis")

        // At a phone's width (390 px) the page reflows: nothing wider than the viewport.
        let frame = page.replacingOccurrences(of: ".html", with: "-phone.html")
        defer { try? FileManager.default.removeItem(atPath: frame) }
        try """
            <!DOCTYPE html><html><body><iframe id="f" src="file://\(page)" style="width:390px;height:800px;border:0"></iframe><pre id="out">pending</pre>
            <script>document.getElementById('f').onload = function () { var d = this.contentDocument.documentElement;
            document.getElementById('out').textContent = 'width ' + d.scrollWidth + ' of ' + d.clientWidth; };</script></body></html>
            """.write(toFile: frame, atomically: true, encoding: .utf8)
        let phone = try await Self.chromium(["--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom", "file://" + frame])
        let widths = phone.output.firstMatch(of: /width (\d+) of (\d+)/)
        #expect(widths != nil && Int(widths!.1)! <= Int(widths!.2)!, "\(widths.map { "\($0.0)" } ?? phone.output)")

        let shot = try await Self.chromium(["--screenshot=" + screenshot, "--window-size=1300,1400", "file://" + page])
        #expect(shot.status == 0)
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000, "a rendered page, \(png.count) bytes")
    }
}
