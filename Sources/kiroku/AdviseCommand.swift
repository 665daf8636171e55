import ArgumentParser
import Foundation
import KirokuAdvisor
import KirokuQueue

/// `kiroku advise`: how many hosts of which type each pool needs, with the working shown.
struct Advise: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Recommend how many c5-class hosts each pool needs, from measured or given load.",
        discussion: """
            Measured (default): queue depth, arrival rate and per-host service time are read from the \
            database. What-if (no database): give --arrival-rate and --service-time. Desired hosts = \
            the largest of the minimum, the utilisation floor, backlog per instance, Erlang C for \
            the wait objective, and the drain rule; every term is printed. Prices come from the \
            instance catalog (catalog/instances.json, or --catalog).
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "What-if: jobs arriving per second.")
    var arrivalRate: Double?

    @Option(help: "What-if: seconds one host takes per image (the in-container figure).")
    var serviceTime: Double?

    @Option(help: "What-if: jobs queued now.")
    var queued = 0

    @Option(help: "What-if: jobs in flight now.")
    var running = 0

    @Option(help: "What-if: hosts running now (for the start-up lag).")
    var currentInstances: Int?

    @Option(help: "What-if: the pool's name.")
    var pool = "cpu"

    @Option(help: "The queue-wait objective, e.g. 100ms, 2s.", transform: DurationArgument.parse)
    var waitTarget = DurationArgument(duration: .milliseconds(500))

    @Option(help: "Size for this percentile of jobs waiting at most --wait-target (e.g. 95) instead of the mean wait.")
    var waitPercentile: Double?

    @Option(help: "The instance type to size for (default: the type the workers reported, else c5.xlarge).")
    var instanceType: String?

    @Option(help: "The type the service time was measured on (default: the workers' reported type, else --instance-type); other sizes are scaled by vCPU.")
    var measuredOn: String?

    @Option(help: "Measured mode: only these pools (repeatable; default: every pool with jobs or workers).")
    var onlyPool: [String] = []

    @Option(help: "The region to price (default: the catalog's).")
    var region: String?

    @Option(help: "The share of hosts on spot, 0 to 1.")
    var spotFraction = 0.0

    @Option(help: "The instance catalog (default: KIROKU_CATALOG, catalog/instances.json, /usr/share/kiroku/catalog/instances.json).")
    var catalog: String?

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

    @Flag(help: "One JSON document (top-level recommended_instances, every term and cost).")
    var json = false

    func validate() throws {
        if (arrivalRate == nil) != (serviceTime == nil) {
            throw ValidationError("what-if mode needs both --arrival-rate and --service-time")
        }
        if let arrivalRate, arrivalRate < 0 { throw ValidationError("--arrival-rate must not be negative") }
        if let serviceTime, serviceTime <= 0 { throw ValidationError("--service-time must be positive (seconds per image per host)") }
        guard queued >= 0, running >= 0 else { throw ValidationError("--queued and --running must not be negative") }
        guard waitTarget.duration > .zero else { throw ValidationError("--wait-target must be longer than zero") }
        if let waitPercentile, !(waitPercentile > 0 && waitPercentile < 100) {
            throw ValidationError("--wait-percentile must be between 0 and 100, e.g. 95")
        }
        guard (0...1).contains(spotFraction) else { throw ValidationError("--spot-fraction must be between 0 and 1") }
        guard maxUtilisation > 0 && maxUtilisation <= 1 else { throw ValidationError("--max-utilisation must be in (0, 1]") }
        guard minInstances >= 0, maxInstances >= max(minInstances, 1) else {
            throw ValidationError("--max-instances must be at least 1 and at least --min-instances")
        }
    }

    static let defaultType = "c5.xlarge"

    /// Advice from what the database says about each pool.
    func measured(_ advisor: Advisor, catalog: InstanceCatalog) throws -> Advice {
        let measurements = try QueueMeasurements().measure(try database.connect(label: "kiroku.advise"), pools: onlyPool.isEmpty ? nil : onlyPool)
        var pools: [PoolAdvice] = []
        var notes: [String] = []
        if measurements.isEmpty { notes.append("no pool has jobs or workers: nothing to size") }
        for measurement in measurements {
            guard var observation = measurement.observation else {
                notes.append("pool \(measurement.pool): " + measurement.notes.joined(separator: "; "))
                continue
            }
            var reported = measurement.instanceType
            if let type = reported, (try? catalog.instance(type)) == nil {
                observation.notes.append("the workers report instance type '\(type)', which the catalog does not list: assuming \(instanceType ?? Self.defaultType) (pass --measured-on)")
                reported = nil
            }
            let type = instanceType ?? reported ?? Self.defaultType
            pools.append(try advisor.advise(observation, measuredOn: measuredOn ?? reported ?? type, instanceType: type))
        }
        return Advice(mode: "measured", objective: advisor.policy.objective, catalog: catalog, pools: pools, notes: notes)
    }

    func run() throws {
        var policy = ScalingPolicy(objective: WaitObjective(target: waitTarget.duration.seconds, percentile: waitPercentile.map { $0 / 100 }))
        policy.maximumUtilisation = maxUtilisation
        policy.drainTarget = drainTarget.duration.seconds
        policy.startupLag = startupLag.duration.seconds
        policy.minimumInstances = minInstances
        policy.maximumInstances = maxInstances
        let loaded: InstanceCatalog
        do {
            loaded = try InstanceCatalog.load(try InstanceCatalog.locate(catalog))
        } catch {
            throw UsageError(description: error.description)
        }
        let advisor = Advisor(catalog: loaded, policy: policy, region: region, spotFraction: spotFraction)
        let advice: Advice
        do {
            if let arrivalRate, let serviceTime {
                let observation = PoolObservation(pool: pool, arrivalRate: arrivalRate, serviceTime: serviceTime, queued: queued,
                                                  running: running, currentInstances: currentInstances)
                let type = instanceType ?? Self.defaultType
                advice = Advice(mode: "what-if", objective: policy.objective, catalog: loaded,
                                pools: [try advisor.advise(observation, measuredOn: measuredOn ?? type, instanceType: type)])
            } else {
                advice = try measured(advisor, catalog: loaded)
            }
        } catch let error as AdvisorError {
            throw UsageError(description: error.description)
        }
        print(json ? try AdviceReport.json(advice) : AdviceReport.text(advice))
    }
}
