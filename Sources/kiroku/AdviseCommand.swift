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

    @Flag(help: "Plan the move of all traffic from --from to --to, step by step: hosts and cost per step, the shadow verdict, the next route command.")
    var plan = false

    @Option(help: "Plan: the new pool.")
    var to = "cpu"

    @Option(help: "Plan: the legacy pool (default: the other pool with the most arrivals).")
    var from: String?

    @Option(help: "Plan: the new pool's routing shares, percent, e.g. 10,25,50,100.", transform: Advise.percents)
    var steps = CutoverPlan.defaultPercents

    @Option(help: "Plan: the legacy pool's instance type, when its workers do not report it (e.g. g4dn.xlarge).")
    var fromType: String?

    @Option(help: "Plan: what the shadow gate judges, decision (the sidecar's food verdict; the default when results carry it) or top1.")
    var gate: ShadowComparison.Measure?

    @Flag(help: "One JSON document (top-level recommended_instances, every term and cost; with --plan, the plan).")
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
        if plan && arrivalRate != nil { throw ValidationError("--plan measures every pool in the database: use it without --arrival-rate") }
        if let from, from == to { throw ValidationError("--from and --to name the same pool '\(to)': the plan moves traffic between two pools") }
    }

    static func percents(_ text: String) throws -> [Int] {
        let values = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ $0 != nil && (1...100).contains($0!) }) else {
            throw ValidationError("'\(text)' is not a list of shares in percent from 1 to 100, e.g. 10,25,50,100")
        }
        let shares = values.compactMap { $0 }
        guard shares == shares.sorted(), Set(shares).count == shares.count else {
            throw ValidationError("the steps must rise, each share once, e.g. 10,25,50,100")
        }
        return shares
    }

    func run() throws {
        let advisor = try options.advisor()
        let advice: Advice
        var history: AdviceHistory?
        var cutover: CutoverPlan?, shadow: ShadowComparison?, measured: [QueueMeasurements.Pool] = []
        do {
            if let arrivalRate, let serviceTime {
                let observation = PoolObservation(pool: pool, arrivalRate: arrivalRate, serviceTime: serviceTime, queued: queued,
                                                  running: running, currentInstances: currentInstances)
                let type = options.instanceType ?? AdvisorOptions.defaultType
                advice = Advice(mode: "what-if", objective: advisor.policy.objective, catalog: advisor.catalog,
                                pools: [try advisor.advise(observation, measuredOn: options.measuredOn ?? type, instanceType: type)])
            } else {
                let connection = try database.connect(label: "kiroku.advise")
                measured = try QueueMeasurements().measure(connection, pools: onlyPool.isEmpty ? nil : onlyPool)
                if html != nil { history = try AdviceHistory.read(connection) }
                if html != nil || plan {
                    shadow = try ShadowComparison.measure(connection, precision: ShadowComparison.defaultPrecision,
                                                          tolerance: ShadowComparison.defaultTolerance, gate: gate)
                }
                advice = try advisor.advise(measured: measured, instanceType: options.instanceType, measuredOn: options.measuredOn,
                                            fallbackType: AdvisorOptions.defaultType)
                if plan {
                    let legacy = from ?? measured.filter { $0.pool != to }.max { $0.primaryArrivalRate < $1.primaryArrivalRate }?.pool ?? "gpu"
                    cutover = try CutoverPlan.make(advisor: advisor, measured: onlyPool.isEmpty ? measured : try QueueMeasurements().measure(connection), from: legacy, to: to,
                                                   percents: steps, routes: try JobQueue(connection: connection).routes(), shadow: shadow,
                                                   toType: options.instanceType, measuredOn: options.measuredOn, fromType: fromType,
                                                   fallbackType: AdvisorOptions.defaultType)
                }
            }
        } catch let error as AdvisorError {
            throw UsageError(description: error.description)
        }
        if let html, let history {
            do {
                try HTMLReport.page(advice, history: history, measured: measured, shadow: shadow, plan: cutover).write(toFile: html, atomically: true, encoding: .utf8)
            } catch {
                throw UsageError(description: "cannot write \(html): \(error.localizedDescription)")
            }
        }
        if let cutover {
            print(json ? try AdviceReport.json(cutover) : PlanReport.text(cutover))
        } else {
            print(json ? try AdviceReport.json(advice) : AdviceReport.text(advice))
        }
    }
}
