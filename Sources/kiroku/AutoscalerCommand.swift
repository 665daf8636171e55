import ArgumentParser
import Foundation
import KirokuAdvisor
import KirokuEndpoints
import KirokuQueue
import Logging
import ServiceLifecycle

/// `kiroku autoscaler`: the advisor as a daemon, for KEDA or an HPA to act on.
struct AutoscalerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "autoscaler",
        abstract: "Recompute the recommendation every interval, record it, and publish it on /metrics.",
        discussion: """
            Each round sizes every pool as `kiroku advise` does, publishes the count (scale out at \
            once, scale in only to the largest recommendation within --stabilisation-window) as \
            kiroku_recommended_instances{pool,instance_type} on /metrics, and records it with its \
            inputs in kiroku.recommendations (the audit trail). SIGTERM or SIGINT stops it.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var options: AdvisorOptions

    @Option(help: "How often to recompute, e.g. 30s.", transform: DurationArgument.parse)
    var interval = DurationArgument(duration: .seconds(30))

    @Option(help: "Scale in only after a lower recommendation has held this long, e.g. 5m.", transform: DurationArgument.parse)
    var stabilisationWindow = DurationArgument(duration: .seconds(300))

    @Option(help: "Port for /metrics, /healthz and /readyz; 0 turns them off.")
    var httpPort = 9465

    @Option(help: "Address the HTTP endpoints bind to.")
    var httpHost = "0.0.0.0"

    func validate() throws {
        guard interval.duration >= .milliseconds(100) else { throw ValidationError("--interval must be at least 100ms") }
        guard stabilisationWindow.duration >= .zero else { throw ValidationError("--stabilisation-window must not be negative") }
        guard (0...65535).contains(httpPort) else { throw ValidationError("--http-port must be between 0 and 65535 (0 turns the endpoints off)") }
    }

    func run() async throws {
        let url = try database.connectionString()
        let logger = Logger(label: "kiroku.autoscaler")
        let autoscaler = try Autoscaler(connectionString: url, advisor: try options.advisor(), instanceType: options.instanceType,
                                        measuredOn: options.measuredOn, fallbackType: AdvisorOptions.defaultType,
                                        interval: interval.duration, stabilisationWindow: stabilisationWindow.duration, logger: logger)
        var services = [ServiceGroupConfiguration.ServiceConfiguration(
            service: AutoscalerService(autoscaler: autoscaler), successTerminationBehavior: .gracefullyShutdownGroup,
            failureTerminationBehavior: .gracefullyShutdownGroup)]
        if httpPort != 0 {
            services.append(.init(service: EndpointServer.make(status: autoscaler, host: httpHost, port: httpPort, serverName: "kiroku-autoscaler",
                                                               logger: Logger(label: "kiroku.http"))))
        }
        logger.notice("autoscaler started", metadata: ["interval_s": "\(interval.duration.seconds)",
                                                       "window_s": "\(stabilisationWindow.duration.seconds)",
                                                       "objective": "\(autoscaler.advisor.policy.objective.description)",
                                                       "database": "\(ConnectionString.redacted(url))"])
        try await ServiceGroup(configuration: ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                                        logger: logger)).run()
    }
}

/// The autoscaler's loop as a service: a graceful shutdown ends it between rounds.
struct AutoscalerService: Service {
    let autoscaler: Autoscaler

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await autoscaler.run() }
        } catch is CancellationError {
            return
        } catch {
            autoscaler.markFailed()
            throw error
        }
    }
}
