import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The worker's HTTP endpoints (Hummingbird): /metrics (Prometheus text), /healthz (alive: 200
/// unless the worker failed), /readyz (200 only once the model is warm and jobs are claimed;
/// 503 while starting, draining or stopped).
public enum HealthServer {
    /// The server as a service to run beside the worker.
    public static func make(worker: Worker, host: String, port: Int, logger: Logger) -> some Service {
        let router = Router()
        router.get("healthz") { _, _ -> Response in
            worker.phase == .failed ? text(.serviceUnavailable, "failed\n") : text(.ok, "ok\n")
        }
        router.get("readyz") { _, _ -> Response in
            let phase = worker.phase
            return phase == .ready ? text(.ok, "ready\n") : text(.serviceUnavailable, "\(phase)\n")
        }
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: worker.metrics.render())))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "kiroku-worker"),
                           logger: logger)
    }

    private static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
