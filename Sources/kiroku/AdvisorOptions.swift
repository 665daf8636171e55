import ArgumentParser
import KirokuAdvisor

/// The objective and the fleet's bounds: what `kiroku advise`, `kiroku autoscaler` and
/// `kiroku simulate` size for, one name per concept.
struct SizingOptions: ParsableArguments {
    @Option(help: "The queue-wait objective, e.g. 100ms, 2s.", transform: DurationArgument.parse)
    var waitTarget = DurationArgument(duration: .milliseconds(500))

    @Option(help: "Size for this percentile of jobs waiting at most --wait-target (e.g. 95) instead of the mean wait.")
    var waitPercentile: Double?

    @Option(help: "Hosts at most this busy on average, 0 to 1.")
    var maxUtilisation = 0.85

    @Option(help: "Clear the current backlog within this long.", transform: DurationArgument.parse)
    var drainTarget = DurationArgument(duration: .seconds(300))

    @Option(help: "Boot, image pull, model load and warm-up of a new host.", transform: DurationArgument.parse)
    var startupLag = DurationArgument(duration: .seconds(120))

    @Option(help: "Never fewer hosts.")
    var minInstances = 1

    @Option(help: "Never more hosts.")
    var maxInstances = 100

    @Option(name: .customLong("expect"), help: "Arrivals expected daily in a UTC window, sized for from a start-up lag before it opens (repeatable), e.g. 01:00-01:15=24 (jobs/s).", transform: ForecastArgument.parse)
    var forecasts: [ArrivalForecast] = []

    func validate() throws {
        guard waitTarget.duration > .zero else { throw ValidationError("--wait-target must be longer than zero") }
        if let waitPercentile, !(waitPercentile > 0 && waitPercentile < 100) {
            throw ValidationError("--wait-percentile must be between 0 and 100, e.g. 95")
        }
        guard maxUtilisation > 0 && maxUtilisation <= 1 else { throw ValidationError("--max-utilisation must be in (0, 1]") }
        guard minInstances >= 0, maxInstances >= max(minInstances, 1) else {
            throw ValidationError("--max-instances must be at least 1 and at least --min-instances")
        }
    }

    /// The policy these options describe.
    var policy: ScalingPolicy {
        var policy = ScalingPolicy(objective: WaitObjective(target: waitTarget.duration.seconds, percentile: waitPercentile.map { $0 / 100 }))
        policy.maximumUtilisation = maxUtilisation
        policy.drainTarget = drainTarget.duration.seconds
        policy.startupLag = startupLag.duration.seconds
        policy.minimumInstances = minInstances
        policy.maximumInstances = maxInstances
        policy.forecasts = forecasts
        return policy
    }
}

/// The sizing, prices and instance types `kiroku advise` and `kiroku autoscaler` share.
struct AdvisorOptions: ParsableArguments {
    @OptionGroup var sizing: SizingOptions

    @Option(help: "The instance type to size for (default: the type the workers reported, else c5.xlarge).")
    var instanceType: String?

    @Option(help: "The type the service time was measured on (default: the workers' reported type, else --instance-type); other sizes are scaled by vCPU.")
    var measuredOn: String?

    @Option(help: "The region to price (default: the catalog's).")
    var region: String?

    @Option(help: "The share of hosts on spot, 0 to 1.")
    var spotFraction = 0.0

    @Option(help: "The instance catalog (default: KIROKU_CATALOG, catalog/instances.json, /usr/share/kiroku/catalog/instances.json).")
    var catalog: String?

    static let defaultType = "c5.xlarge"

    func validate() throws {
        guard (0...1).contains(spotFraction) else { throw ValidationError("--spot-fraction must be between 0 and 1") }
    }

    /// The advisor these options describe, with its catalog loaded.
    func advisor() throws -> Advisor {
        do {
            return Advisor(catalog: try InstanceCatalog.load(try InstanceCatalog.locate(catalog)), policy: sizing.policy, region: region,
                           spotFraction: spotFraction)
        } catch {
            throw UsageError(description: error.description)
        }
    }
}
