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
    @OptionGroup var options: AdvisorOptions

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

    @Option(help: "Measured mode: only these pools (repeatable; default: every pool with jobs or workers).")
    var onlyPool: [String] = []

    @Flag(help: "One JSON document (top-level recommended_instances, every term and cost).")
    var json = false

    @Option(help: "Also write a self-contained HTML page with charts (queue depth, arrivals, hosts, latency, agreement) to FILE; measured mode.")
    var html: String?

    func validate() throws {
        if (arrivalRate == nil) != (serviceTime == nil) {
            throw ValidationError("what-if mode needs both --arrival-rate and --service-time")
        }
        if let arrivalRate, arrivalRate < 0 { throw ValidationError("--arrival-rate must not be negative") }
        if html != nil && arrivalRate != nil { throw ValidationError("--html charts what the database recorded: use it without --arrival-rate") }
        if let serviceTime, serviceTime <= 0 { throw ValidationError("--service-time must be positive (seconds per image per host)") }
        guard queued >= 0, running >= 0 else { throw ValidationError("--queued and --running must not be negative") }
    }

    func run() throws {
        let advisor = try options.advisor()
        let advice: Advice
        var history: AdviceHistory?
        do {
            if let arrivalRate, let serviceTime {
                let observation = PoolObservation(pool: pool, arrivalRate: arrivalRate, serviceTime: serviceTime, queued: queued,
                                                  running: running, currentInstances: currentInstances)
                let type = options.instanceType ?? AdvisorOptions.defaultType
                advice = Advice(mode: "what-if", objective: advisor.policy.objective, catalog: advisor.catalog,
                                pools: [try advisor.advise(observation, measuredOn: options.measuredOn ?? type, instanceType: type)])
            } else {
                let connection = try database.connect(label: "kiroku.advise")
                let measured = try QueueMeasurements().measure(connection, pools: onlyPool.isEmpty ? nil : onlyPool)
                if html != nil { history = try AdviceHistory.read(connection) }
                advice = try advisor.advise(measured: measured, instanceType: options.instanceType, measuredOn: options.measuredOn,
                                            fallbackType: AdvisorOptions.defaultType)
            }
        } catch let error as AdvisorError {
            throw UsageError(description: error.description)
        }
        if let html, let history {
            do {
                try HTMLReport.page(advice, history: history).write(toFile: html, atomically: true, encoding: .utf8)
            } catch {
                throw UsageError(description: "cannot write \(html): \(error.localizedDescription)")
            }
        }
        print(json ? try AdviceReport.json(advice) : AdviceReport.text(advice))
    }
}
