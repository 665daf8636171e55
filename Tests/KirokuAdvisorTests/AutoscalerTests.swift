import AsyncHTTPClient
import Foundation
import KirokuAdvisor
import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("The autoscaler", .subprocesses)
struct AutoscalerTests {
    @Test("stabilisation: out at once, in only after a lower recommendation held the whole window")
    func stabiliser() {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var stabiliser = Stabiliser(window: 300)
        #expect(stabiliser.publish(5, at: start) == 5)
        #expect(stabiliser.publish(3, at: start + 60) == 5)
        #expect(stabiliser.publish(8, at: start + 120) == 8)
        #expect(stabiliser.publish(2, at: start + 400) == 8)
        #expect(stabiliser.publish(2, at: start + 430) == 2)
        var seeded = Stabiliser(window: 300, history: [(start, 9)])
        #expect(seeded.publish(1, at: start + 100) == 9, "a restart keeps the window")
    }

    @Test("the daemon records each round with its inputs and publishes kiroku_recommended_instances; SIGTERM stops it")
    func daemon() async throws {
        let url = try TestDatabase.create()
        let connection = try PostgresConnection(url)
        try connection.execute("""
            INSERT INTO kiroku.jobs (image_uri, pool) SELECT 'https://cdn.example/' || g || '.jpg', 'cpu' FROM generate_series(1, 600) AS g;
            INSERT INTO kiroku.workers (id, host, pool, model, cores, version, instance_type, images_per_second, speed_measured_at)
            VALUES ('w1', 'host-1', 'cpu', 'efficientnet-lite0', 4, 'test', 'c5.xlarge', 2.0, now());
            """)
        let port = try freePort()
        let catalog = SizingRuleTests.root.appendingPathComponent("catalog/instances.json").path
        let daemon = try ChildProcess(["autoscaler", "--interval", "300ms", "--http-port", "\(port)", "--http-host", "127.0.0.1",
                                        "--wait-target", "1s", "--catalog", catalog], databaseURL: url)
        let recorded = try await Self.eventually {
            try connection.query("SELECT count(*) AS n FROM kiroku.recommendations").single("n").int("n") >= 3
        }
        #expect(recorded, "\(daemon.stderr)")
        let row = try connection.query("SELECT pool, instance_type, desired, recommended, stabilised, inputs::text AS inputs FROM kiroku.recommendations ORDER BY id DESC LIMIT 1").single("row")
        let (pool, type) = (try row.string("pool"), try row.string("instance_type"))
        #expect(pool == "cpu" && type == "c5.xlarge")
        let recommended = try row.int("recommended")
        // 600 jobs in the last minute at 0.5 s per image: 10 jobs/s, a = 5 hosts busy; the backlog rule wants more.
        let stabilised = try row.int("stabilised")
        #expect(recommended > 5 && stabilised >= recommended)
        let inputs = try JSONSerialization.jsonObject(with: Data(try row.string("inputs").utf8)) as? [String: Any]
        #expect(((inputs?["observation"] as? [String: Any])?["service_time"] as? Double) == 0.5)
        #expect(((inputs?["sizing"] as? [String: Any])?["terms"] as? [Any])?.count == 5)

        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(5))
        let metrics = String(buffer: try await response.body.collect(upTo: 1 << 20))
        #expect(metrics.contains(#"kiroku_recommended_instances{pool="cpu",instance_type="c5.xlarge"}"#), "\(metrics)")
        #expect(metrics.contains(#"kiroku_service_time_seconds{pool="cpu"} 0.5"#))
        #expect(metrics.contains("kiroku_oldest_transaction_seconds "), "\(metrics)")
        #expect(metrics.contains(#"kiroku_dead_tuples{table="jobs"}"#), "\(metrics)")
        #expect(metrics.contains(#"kiroku_live_tuples{table="jobs"}"#), "\(metrics)")
        let ready = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz"), timeout: .seconds(5))
        #expect(ready.status == .ok)

        daemon.signal(SIGTERM)
        let exit = await daemon.wait(timeout: .seconds(30))
        #expect(exit.status == 0, "\(exit.stderr)")
    }

    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<300 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try condition()
    }
}
