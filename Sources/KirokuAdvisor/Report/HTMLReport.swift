import Foundation

/// The advisor's report as one self-contained HTML page: the text report, then SVG line charts
/// (queue depth and arrivals over time, recommended versus running hosts, latency per pool,
/// shadow agreement over time). No scripts, fonts or network: it opens anywhere.
public enum HTMLReport {
    /// The page.
    public static func page(_ advice: Advice, history: AdviceHistory) -> String {
        let charts = [
            chart("Arrivals (jobs/s)", history.arrivals), chart("Queue depth (jobs waiting)", history.queueDepth),
            chart("Hosts: recommended vs running", history.hosts), chart("Latency, enqueue to result (ms)", history.latency),
            chart("Shadow comparison: top-1 agreement (%)", history.agreement),
        ]
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Kiroku advisor</title>
            <style>
            body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
            pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 12px; }
            figure { display: inline-block; margin: 0 1.5em 1.5em 0; }
            figcaption { font-weight: 600; margin-bottom: .3em; }
            svg text { font-size: 11px; fill: #444; }
            </style></head><body>
            <h1>Kiroku advisor</h1>
            <p>\(escape(advice.objective.description)); generated \(escape(ISO8601DateFormatter().string(from: advice.generatedAt))); \
            recommended: <strong>\(advice.recommendedInstances)</strong> hosts for the first pool.</p>
            \(charts.joined(separator: "\n"))
            <h2>Working</h2>
            <pre>\(escape(AdviceReport.text(advice)))</pre>
            </body></html>
            """
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
        var svg = ["<svg width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(escape(title))\">"]
        svg.append("<line x1=\"\(left)\" y1=\"\(y(0))\" x2=\"\(width - right)\" y2=\"\(y(0))\" stroke=\"#999\"/>")
        svg.append("<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(y(0))\" stroke=\"#999\"/>")
        for tick in 0...4 {
            let value = maximum / 1.1 * Double(tick) / 4
            svg.append("<text x=\"\(left - 4)\" y=\"\(y(value) + 4)\" text-anchor=\"end\">\(format(value))</text>")
        }
        let clock = DateFormatter()
        clock.dateFormat = "HH:mm"
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
            let legendX = left + Double(index) * 150
            svg.append("<rect x=\"\(legendX)\" y=\"\(height - 14)\" width=\"10\" height=\"3\" fill=\"\(colour)\"/>")
            svg.append("<text x=\"\(legendX + 14)\" y=\"\(height - 10)\">\(escape(line.name))</text>")
        }
        svg.append("</svg>")
        return "<figure class=\"chart\"><figcaption>\(escape(title))</figcaption>\(svg.joined())</figure>"
    }

    private static func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : value >= 1 ? String(format: "%.1f", value) : String(format: "%.2f", value)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
