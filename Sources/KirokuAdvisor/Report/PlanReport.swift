import Foundation

/// Renders a cut-over plan for a terminal: the pools' speeds, a table of the steps, the end state's
/// cost ratio, the shadow verdict, the next command, and each step's sizing working.
public enum PlanReport {
    /// The terminal report.
    public static func text(_ plan: CutoverPlan) -> String {
        var lines = [String(format: "Cut-over plan: %@ -> %@ for %.3g jobs/s in all (every pool's arrivals, shadow copies not counted); %@'s routing share now %.0f%%",
                            plan.from, plan.to, plan.totalArrivalRate, plan.to, plan.currentPercent)]
        for speed in plan.speeds {
            lines.append(String(format: "  %@: %@, %@ (%@), %d %@ seen", speed.pool, speed.instanceType ?? "instance type unknown",
                                speed.serviceTime.map { String(format: "%.3g s per image per host", $0) } ?? "speed unknown", speed.source,
                                speed.liveHosts, speed.liveHosts == 1 ? "host" : "hosts"))
        }
        lines.append(contentsOf: plan.notes.map { "note: \($0)" })
        guard plan.toMeasure.isEmpty else {
            lines.append("Not planned yet; measure first:")
            lines.append(contentsOf: plan.toMeasure.map { "  - \($0)" })
            return lines.joined(separator: "\n")
        }
        var table = [["step", "\(plan.from) hosts", "\(plan.to) hosts", "\(plan.from) $/h", "\(plan.to) $/h", "total $/h", "$/M images", ""]]
        for step in plan.steps {
            table.append(["\(step.percent)%", String(step.pools[0].instances), String(step.pools[1].instances),
                          String(format: "%.2f", step.pools[0].perHour), String(format: "%.2f", step.pools[1].perHour),
                          String(format: "%.2f", step.perHour), String(format: "%.2f", step.perMillionImages),
                          step.meetsObjective ? "" : "capped by --max-instances: objective NOT met"])
        }
        lines.append("")
        lines.append(contentsOf: AdviceReport.columns(table).map { "  " + $0 })
        if let ratio = plan.endOverStart, let end = plan.steps.last, let start = plan.steps.first {
            lines.append(String(format: "end state (%d%% on %@): $%.2f/h, %.2fx the all-%@ fleet's $%.2f/h (1/%.1f)", end.percent, plan.to, end.perHour,
                                ratio, plan.from, start.perHour, 1 / ratio))
        }
        if let today = plan.todayPerHour {
            lines.append(String(format: "today's running fleet: $%.2f/h%@", today,
                                plan.endOverToday.map { String(format: "; the end state costs %.2fx that", $0) } ?? ""))
        }
        if let shadow = plan.shadow {
            lines.append("shadow comparison: \(shadow.recommendation) (" + shadow.agreementText + ")")
            lines += shadow.warnings.map { "warning: " + $0 }
        }
        if let next = plan.nextPercent, let command = plan.nextCommand {
            lines.append("next step: \(next)% on \(plan.to): " + (plan.nextStepAllowed
                ? "allowed by the shadow comparison: \(command)" : "held until the shadow comparison says cut over; then: \(command)"))
        } else {
            lines.append("the move is complete: \(plan.to) serves every job")
        }
        lines.append("")
        lines.append("Working (the what-if sizing of each pool's share; kiroku advise --arrival-rate R --service-time S --instance-type T gives the same):")
        for step in plan.steps {
            for pool in step.pools {
                guard let sizing = pool.sizing, let deciding = sizing.terms.max(by: { $0.instances < $1.instances }) else {
                    lines.append("  \(step.percent)% \(pool.pool): no traffic, no hosts")
                    continue
                }
                lines.append(String(format: "  %d%% %@: %.3g jobs/s -> %d hosts (%@; decided by %@: %@)", step.percent, pool.pool, pool.arrivalRate,
                                    sizing.recommended, sizing.terms.map { "\($0.rule) \($0.instances)" }.joined(separator: ", "),
                                    deciding.rule, deciding.working))
            }
        }
        return lines.joined(separator: "\n")
    }
}
