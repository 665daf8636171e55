import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// What a long-running kiroku process (a worker, the autoscaler) reports on its endpoints.
public protocol EndpointStatus: Sendable {
    /// False once the process has failed (/healthz answers 503).
    var isHealthy: Bool { get }
    /// True while it does its job (/readyz answers 200); false while starting or stopping.
    var isReady: Bool { get }
    /// A word for the state, the body of /healthz and /readyz.
    var stateDescription: String { get }
    /// The Prometheus text exposition for /metrics.
    func renderMetrics() -> [UInt8]
}

/// The operational HTTP endpoints (Hummingbird): /metrics (Prometheus text), /healthz (alive),
/// /readyz (ready for work). Run as a service beside the process's own.
public enum EndpointServer {
    /// The server as a service.
    public static func make(status: some EndpointStatus, host: String, port: Int, serverName: String, logger: Logger) -> some Service {
        let router = Router()
        router.get("healthz") { _, _ -> Response in
            text(status.isHealthy ? .ok : .serviceUnavailable, status.stateDescription + "\n")
        }
        router.get("readyz") { _, _ -> Response in
            text(status.isReady ? .ok : .serviceUnavailable, status.stateDescription + "\n")
        }
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: status.renderMetrics())))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: serverName),
                           logger: logger)
    }

    private static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
