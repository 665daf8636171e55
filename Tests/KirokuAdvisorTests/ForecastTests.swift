import Foundation
import KirokuAdvisor
import KirokuTestSupport
import Testing

@Suite("Arrival forecasts: scheduled bursts sized ahead of the start-up lag", .subprocesses)
struct ForecastTests {
    /// Seconds after midnight UTC, on the first day of the epoch.
    static func at(_ hours: Int, _ minutes: Int, _ seconds: Int = 0) -> Date {
        Date(timeIntervalSince1970: Double(hours * 3600 + minutes * 60 + seconds))
    }

    @Test("HH:MM-HH:MM=RATE parses; anything else is refused")
    func parsing() {
        #expect(ArrivalForecast("01:00-01:15=24") == ArrivalForecast(start: 3600, end: 4500, arrivalRate: 24))
        #expect(ArrivalForecast("23:30-00:30=2.5") == ArrivalForecast(start: 84_600, end: 1800, arrivalRate: 2.5))
        for bad in ["01:00-01:15", "1:00-01:15=24", "01:00-01:15=0", "01:00-01:15=-3", "25:00-26:00=1", "01:60-02:00=1",
                    "01:00-01:00=5", "01:00=5", "01:00-01:15=lots"] {
            #expect(ArrivalForecast(bad) == nil, "\(bad)")
        }
        #expect(ArrivalForecast("01:00-01:15=24")?.description == "24/s from 01:00 to 01:15 UTC")
    }

    @Test("a window is active from the lead before it opens until it closes, across midnight too")
    func windows() throws {
        let burst = try #require(ArrivalForecast("01:00-01:15=24"))
        #expect(!burst.isActive(at: Self.at(0, 57, 59), lead: 120))
        #expect(burst.isActive(at: Self.at(0, 58), lead: 120))
        #expect(burst.isActive(at: Self.at(1, 14, 59), lead: 120))
        #expect(!burst.isActive(at: Self.at(1, 15), lead: 120))
        // Every day, not only the first.
        #expect(burst.isActive(at: Self.at(24 * 7 + 1, 5), lead: 120))
        let overnight = try #require(ArrivalForecast("23:30-00:30=2"))
        #expect(overnight.isActive(at: Self.at(23, 29), lead: 120) && overnight.isActive(at: Self.at(0, 10), lead: 0))
        #expect(!overnight.isActive(at: Self.at(0, 30), lead: 120) && !overnight.isActive(at: Self.at(12, 0), lead: 120))
        // A lead that reaches back past midnight.
        let early = try #require(ArrivalForecast("00:01-00:10=2"))
        #expect(early.isActive(at: Self.at(23, 59), lead: 120) && !early.isActive(at: Self.at(23, 58), lead: 120))
    }

    @Test("the planner's forecast rule: Erlang C at the forecast rate while the window is (about to be) open, 0 otherwise")
    func plannerTerm() throws {
        var policy = ScalingPolicy(objective: WaitObjective(target: 0.1))
        policy.forecasts = [try #require(ArrivalForecast("01:00-01:15=10"))]
        let quiet = PoolObservation(pool: "cpu", arrivalRate: 1, serviceTime: 0.47, observedAt: Self.at(0, 59))
        let sized = CapacityPlanner.size(quiet, policy: policy)
        // The project's example: 10/s at 0.47 s with a 100 ms mean wait needs 7 hosts.
        #expect(SizingRuleTests.term(sized, "forecast") == 7 && sized.recommended == 7, "\(sized.terms)")
        #expect(sized.terms.last?.working.contains("10/s from 01:00 to 01:15 UTC") == true)
        var later = quiet
        later.observedAt = Self.at(2, 0)
        let after = CapacityPlanner.size(later, policy: policy)
        #expect(SizingRuleTests.term(after, "forecast") == 0 && after.recommended < 7)
        #expect(after.terms.last?.working.hasPrefix("no forecast window open") == true)
        policy.forecasts = []
        #expect(CapacityPlanner.size(quiet, policy: policy).terms.allSatisfy { $0.rule != "forecast" })
    }

    /// 30 minutes at 2/s, a 10-minute step to 12/s at 00:10, back to 2/s; a 120 s start-up lag.
    static func step() -> (FleetSimulation, ScalingPolicy) {
        let trace = Array(repeating: 2.0, count: 10) + Array(repeating: 12.0, count: 10) + Array(repeating: 2.0, count: 10)
        var simulation = FleetSimulation(trace: trace, serviceTime: 0.47, objective: WaitObjective(target: 0.5))
        simulation.startupLag = 120
        var policy = ScalingPolicy(objective: WaitObjective(target: 0.5, percentile: 0.9))
        policy.startupLag = 120
        return (simulation, policy)
    }

    @Test("a step no queue-driven rule sees coming: without a forecast the minutes of the start-up lag are lost by every rule; with one the advisor meets them")
    func burst() {
        var (simulation, policy) = Self.step()
        let blind = simulation.run(.advisor(policy))
        // Minutes 10 and 11 arrive before any new host can start, whatever the rule.
        #expect(blind.minutes - blind.minutesMeeting >= 2, "\(blind)")
        #expect(simulation.run(.keda(target: 0.5)).minutesMeeting <= blind.minutes - 2)
        policy.forecasts = [ArrivalForecast(start: 600, end: 1200, arrivalRate: 12)]
        let forecast = simulation.run(.advisor(policy))
        #expect(forecast.minutesMeeting == forecast.minutes, "\(forecast)")
        // The comparison gives the baselines the same scheduled hosts.
        let comparison = PolicyComparison.run(simulation, policy: policy, requiredShare: 0.99)
        #expect(comparison.keda.meetingShare >= blind.meetingShare, "\(comparison.keda)")
    }

    @Test("a step enqueued ahead as scheduled jobs: the advisor sizes for it from the queue, with no forecast, as it does with one")
    func scheduledStep() {
        var (simulation, policy) = Self.step()
        let blind = simulation.run(.advisor(policy))
        #expect(blind.minutes - blind.minutesMeeting >= 2, "\(blind)")
        // 10/s of the step's 12/s enqueued an hour ahead with run_after.
        simulation.enqueuedAhead = [ArrivalForecast(start: 600, end: 1200, arrivalRate: 10)]
        let scheduled = simulation.run(.advisor(policy))
        #expect(scheduled.jobs == blind.jobs, "the same arrivals, only enqueued earlier")
        #expect(scheduled.minutesMeeting == scheduled.minutes, "\(scheduled)")
        // Queue-counting rules do not see jobs that are not due.
        #expect(simulation.run(.keda(target: 0.5)).minutesMeeting <= blind.minutes - 2)
        // Enqueued too late (a minute ahead, within the start-up lag) it cannot help all minutes.
        simulation.schedulingLead = 60
        #expect(simulation.run(.advisor(policy)).minutesMeeting < scheduled.minutesMeeting)
    }

    @Test("--expect on the command line: used by simulate and advise, a bad one explained")
    func command() async throws {
        let advise = try await KirokuProcess.run(["advise", "--arrival-rate", "1", "--service-time", "0.47", "--wait-target", "100ms",
                                             "--instance-type", "c5.xlarge", "--expect", "00:00-23:59=10", "--json"])
        #expect(advise.status == 0, "\(advise.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(advise.stdout.utf8)) as? [String: Any]
        #expect(json?["recommended_instances"] as? Int == 7, "\(advise.stdout)")
        let bad = try await KirokuProcess.run(["advise", "--arrival-rate", "1", "--service-time", "0.47", "--expect", "1am=24"])
        #expect(bad.status == 2, "\(bad.status)")
        #expect(bad.stderr.contains("invalid forecast '1am=24'") && bad.stderr.contains("01:00-01:15=24"), "\(bad.stderr)")
    }
}
