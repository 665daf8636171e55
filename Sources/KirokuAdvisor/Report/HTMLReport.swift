import Foundation

/// The advisor's report as one self-contained HTML page: a panel per pool (hosts now and
/// recommended, utilisation, cost, waits, the shadow verdict), SVG line charts fitted to the data
/// (queue depth and arrivals, recommended versus running hosts, latency, shadow agreement), the
/// cut-over plan as charts of hosts and cost per step, and the full working. No scripts, fonts or
/// network: it opens anywhere, and reflows to a phone's width.
public enum HTMLReport {
    /// The page.
    public static func page(_ advice: Advice, history: AdviceHistory, measured: [QueueMeasurements.Pool] = [],
                            shadow: ShadowComparison? = nil, plan: CutoverPlan? = nil) -> String {
        let charts = [
            chart("Arrivals (jobs/s)", history.arrivals), chart("Queue depth (jobs waiting)", history.queueDepth),
            chart("Hosts: recommended vs running", history.hosts), chart("Latency, enqueue to result (ms)", history.latency),
            chart("Shadow comparison: top-1 agreement (%)", history.agreement),
        ]
        let panels = advice.pools.map { pool in panel(pool, measured: measured.first { $0.pool == pool.observation.pool }, shadow: shadow) }
        let unsized = advice.notes.map { "<p class=\"note\">\(escape($0))</p>" }
        let working = AdviceReport.text(advice) + (plan.map { "\n\n" + PlanReport.text($0) } ?? "")
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Kiroku advisor</title>
            <style>
            body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
            pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 12px; }
            .panels { display: flex; flex-wrap: wrap; gap: 1em; }
            .panel { border: 1px solid #ddd; border-radius: 6px; padding: .5em 1em; flex: 1 1 280px; max-width: 100%; box-sizing: border-box; }
            .panel h3 { margin: .3em 0; }
            .panel td { padding: 2px 8px 2px 0; vertical-align: top; }
            .scroll { overflow-x: auto; max-width: 100%; }
            table.steps { border-collapse: collapse; }
            table.steps td, table.steps th { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; }
            figure { display: inline-block; margin: 0 1.5em 1.5em 0; max-width: 100%; }
            figure svg { max-width: 100%; height: auto; }
            figcaption { font-weight: 600; margin-bottom: .3em; }
            svg text { font-size: 11px; fill: #444; }
            .note { color: #8a5a00; }
            @media (max-width: 600px) { body { margin: .6em; } }
            </style></head><body>
            <h1>Kiroku advisor</h1>
            <p>\(escape(advice.objective.description)); generated \(escape(ISO8601DateFormatter().string(from: advice.generatedAt))); \
            recommended: <strong>\(advice.recommendedInstances)</strong> hosts for the first pool.</p>
            <h2>Pools</h2>
            <div class="panels">\(panels.joined(separator: "\n"))</div>
            \(unsized.joined(separator: "\n"))
            <h2>Over time</h2>
            \(charts.joined(separator: "\n"))
            \(plan.map(planSection) ?? "")
            <h2>Working</h2>
            <pre>\(escape(working))</pre>
            </body></html>
            """
    }

    /// One pool's panel.
    static func panel(_ pool: PoolAdvice, measured: QueueMeasurements.Pool?, shadow: ShadowComparison?) -> String {
        let o = pool.observation, s = pool.sizing
        func ms(_ seconds: Double?) -> String { seconds.map { String(format: "%.0f ms", $0 * 1000) } ?? "-" }
        var rows = [
            ("Hosts now", o.currentInstances.map(String.init) ?? "unknown"),
            ("Recommended", "\(s.recommended) × \(pool.instanceType)" + (s.limitedByMaximum ? " (capped: objective not met)" : "")),
            ("Utilisation", String(format: "%.0f%% at the recommendation", s.utilisation * 100)
                + (pool.currentCost.map { String(format: "; %.0f%% now", $0.utilisation * 100) } ?? "")),
            ("Cost per hour", String(format: "$%.2f recommended", pool.cost.poolPerHour)
                + (pool.currentCost.map { String(format: "; $%.2f now", $0.poolPerHour) } ?? "")),
            ("Per million images", String(format: "$%.2f", pool.cost.perMillionAtUtilisation)),
            ("Arrivals", String(format: "%.3g jobs/s; %d waiting, %d running", o.arrivalRate, o.queued, o.running)),
            ("Service time", String(format: "%.3g s per image per host", o.serviceTime)
                + (measured?.serviceTimeSource.map { " (\($0))" } ?? "")),
            ("Queue wait", "p50 \(ms(measured?.waitP50)), p95 \(ms(measured?.waitP95))"),
        ]
        if let shadow, shadow.poolA == o.pool || shadow.poolB == o.pool || shadow.pools.contains(where: { $0.pool == o.pool }) {
            rows.append(("Shadow", shadow.recommendation + " (" + shadow.agreementText + ")"))
        }
        let body = rows.map { "<tr><td>\(escape($0.0))</td><td>\(escape($0.1))</td></tr>" }.joined()
        return "<section class=\"panel\"><h3>Pool \(escape(o.pool))</h3><table>\(body)</table></section>"
    }

    /// The cut-over plan: its table, then hosts and cost per step as stacked bars.
    static func planSection(_ plan: CutoverPlan) -> String {
        var html = ["<h2>Cut-over plan: \(escape(plan.from)) to \(escape(plan.to))</h2>"]
        guard plan.toMeasure.isEmpty else {
            html.append("<p>Not planned yet; measure first:</p><ul>" + plan.toMeasure.map { "<li>\(escape($0))</li>" }.joined() + "</ul>")
            return html.joined(separator: "\n")
        }
        var table = ["<div class=\"scroll\"><table class=\"steps\"><tr><th>\(escape(plan.to)) share</th><th>\(escape(plan.from)) hosts</th><th>\(escape(plan.to)) hosts</th><th>$/h</th><th>$/M images</th></tr>"]
        for step in plan.steps {
            table.append(String(format: "<tr><td>%d%%</td><td>%d</td><td>%d</td><td>%.2f</td><td>%.2f</td></tr>", step.percent, step.pools[0].instances,
                                step.pools[1].instances, step.perHour, step.perMillionImages))
        }
        html.append(table.joined() + "</table></div>")
        let labels = plan.steps.map { "\($0.percent)%" }
        let names = [plan.from, plan.to]
        html.append(bars("Hosts per step", labels: labels, series: names.indices.map { i in (names[i], plan.steps.map { Double($0.pools[i].instances) }) }))
        html.append(bars("Cost per hour per step ($)", labels: labels, series: names.indices.map { i in (names[i], plan.steps.map { $0.pools[i].perHour }) }))
        var summary: [String] = []
        if let ratio = plan.endOverStart { summary.append(String(format: "End state: %.2fx the cost of serving everything on %@.", ratio, plan.from)) }
        if let ratio = plan.endOverToday { summary.append(String(format: "%.2fx today's running fleet.", ratio)) }
        if let shadow = plan.shadow { summary.append("Shadow comparison: " + shadow.recommendation + ".") }
        if let command = plan.nextCommand {
            summary.append((plan.nextStepAllowed ? "Next step, allowed: " : "Next step, held until the shadow comparison allows it: ") + command)
        }
        html.append("<p>" + escape(summary.joined(separator: " ")) + "</p>")
        return html.joined(separator: "\n")
    }

    /// Stacked bars, one per label, one colour per series.
    static func bars(_ title: String, labels: [String], series: [(name: String, values: [Double])], width: Double = 560, height: Double = 220) -> String {
        let (left, right, top, bottom) = (50.0, 10.0, 10.0, 40.0)
        let totals = labels.indices.map { i in series.reduce(0) { $0 + $1.values[i] } }
        let maximum = max(totals.max() ?? 1, 1e-9) * 1.1
        func y(_ value: Double) -> Double { top + (height - top - bottom) * (1 - value / maximum) }
        let slot = (width - left - right) / Double(max(labels.count, 1))
        var svg = frame(title, width: width, height: height, left: left, right: right, maximum: maximum, y: y)
        for (index, label) in labels.enumerated() {
            let x = left + slot * Double(index) + slot * 0.2
            var base = 0.0
            for (number, line) in series.enumerated() where line.values[index] > 0 {
                let value = line.values[index]
                svg.append(String(format: "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%@\"><title>%@: %@</title></rect>",
                                  x, y(base + value), slot * 0.6, y(base) - y(base + value), colours[number % colours.count], escape(line.name), format(value)))
                base += value
            }
            svg.append(String(format: "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%@</text>", x + slot * 0.3, height - bottom + 14, escape(label)))
        }
        for (number, line) in series.enumerated() { svg += legend(line.name, number, left: left, height: height) }
        svg.append("</svg>")
        return "<figure class=\"chart\"><figcaption>\(escape(title))</figcaption>\(svg.joined())</figure>"
    }

    static let colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]

    /// One line chart; "no data" when every series is empty.
    static func chart(_ title: String, _ series: [AdviceHistory.Series], width: Double = 560, height: Double = 220) -> String {
        let points = series.flatMap(\.points)
        let (left, right, top, bottom) = (50.0, 10.0, 10.0, 40.0)
        guard let first = points.map(\.at).min(), let last = points.map(\.at).max() else {
            return "<figure class=\"chart\"><figcaption>\(escape(title))</figcaption><svg width=\"\(Int(width))\" height=\"40\" role=\"img\"><text x=\"10\" y=\"25\">no data yet</text></svg></figure>"
        }
        let span = max(last.timeIntervalSince(first), 1)
        let maximum = max(points.map(\.value).max() ?? 1, 1) * 1.1
        func x(_ date: Date) -> Double { left + (width - left - right) * date.timeIntervalSince(first) / span }
        func y(_ value: Double) -> Double { top + (height - top - bottom) * (1 - value / maximum) }
        var svg = frame(title, width: width, height: height, left: left, right: right, maximum: maximum, y: y)
        svg.append("<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(y(0))\" stroke=\"#999\"/>")
        let clock = DateFormatter()
        clock.dateFormat = span < 600 ? "HH:mm:ss" : "HH:mm"
        clock.timeZone = TimeZone(identifier: "UTC")
        for tick in 0...3 {
            let date = first.addingTimeInterval(span * Double(tick) / 3)
            let anchor = tick == 0 ? "start" : tick == 3 ? "end" : "middle"
            svg.append("<text x=\"\(x(date))\" y=\"\(height - bottom + 14)\" text-anchor=\"\(anchor)\">\(clock.string(from: date))</text>")
        }
        for (index, line) in series.enumerated() where !line.points.isEmpty {
            let colour = colours[index % colours.count]
            let path = line.points.map { String(format: "%.1f,%.1f", x($0.at), y($0.value)) }.joined(separator: " ")
            svg.append("<polyline class=\"series\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.5\" points=\"\(path)\"/>")
            if line.points.count == 1, let only = line.points.first {
                svg.append(String(format: "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%@\"/>", x(only.at), y(only.value), colour))
            }
            svg += legend(line.name, index, left: left, height: height)
        }
        svg.append("</svg>")
        return "<figure class=\"chart\"><figcaption>\(escape(title))</figcaption>\(svg.joined())</figure>"
    }

    /// An SVG's opening, its baseline and five value ticks up to `maximum` / 1.1 (the 10% headroom).
    private static func frame(_ title: String, width: Double, height: Double, left: Double, right: Double, maximum: Double,
                              y: (Double) -> Double) -> [String] {
        var svg = ["<svg width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(escape(title))\">"]
        svg.append("<line x1=\"\(left)\" y1=\"\(y(0))\" x2=\"\(width - right)\" y2=\"\(y(0))\" stroke=\"#999\"/>")
        for tick in 0...4 {
            let value = maximum / 1.1 * Double(tick) / 4
            svg.append("<text x=\"\(left - 4)\" y=\"\(y(value) + 4)\" text-anchor=\"end\">\(format(value))</text>")
        }
        return svg
    }

    /// The legend entry of series `index`, in its colour, along the bottom.
    private static func legend(_ name: String, _ index: Int, left: Double, height: Double) -> [String] {
        let x = left + Double(index) * 150
        return ["<rect x=\"\(x)\" y=\"\(height - 14)\" width=\"10\" height=\"3\" fill=\"\(colours[index % colours.count])\"/>",
                "<text x=\"\(x + 14)\" y=\"\(height - 10)\">\(escape(name))</text>"]
    }

    private static func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : value >= 1 ? String(format: "%.1f", value) : String(format: "%.2f", value)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
