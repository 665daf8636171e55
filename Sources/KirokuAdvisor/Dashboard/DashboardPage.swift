/// The dashboard's page: HTML, a stylesheet and a script, all served by `kiroku dashboard` itself
/// (no network beyond it). The script polls `/api/dashboard` every second and draws with DOM calls
/// and `textContent` only, so no string from the database is ever parsed as markup.
public enum DashboardPage {
    /// The page.
    public static let html = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer"><link rel="icon" href="data:,"><title>Kiroku</title><link rel="stylesheet" href="/dashboard.css"></head>
        <body><header><h1>Kiroku</h1><span id="state">connecting…</span></header>
        <main>
        <section><h2>Pools</h2><div id="pools" class="cards"></div></section>
        <section><h2>Cut-over</h2><div id="cutover"></div></section>
        <section><h2>Shadow comparison</h2><div id="shadow"></div></section>
        <section><h2>Live workers</h2><div class="scroll"><table id="workers"></table></div></section>
        <section><h2>Latest finished jobs</h2><div class="scroll"><table id="latest"></table></div></section>
        <section><h2>Failures in the last hour, by category</h2><div class="scroll"><table id="failures"></table></div></section>
        <section><h2>Doctor</h2><ul id="health"></ul></section>
        </main><script src="/dashboard.js"></script></body></html>
        """

    /// The stylesheet: cards that reflow to one column on a phone; wide tables scroll inside their box.
    public static let css = """
        *{box-sizing:border-box}body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#1d2330;background:#f4f5f7}
        header{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:baseline;padding:.8em 1em;background:#1d2330;color:#fff}
        h1{margin:0;font-size:1.3em}h2{font-size:1.05em;margin:1.2em 0 .5em}main{padding:0 1em 2em;max-width:1200px}
        #state.stale{color:#ffb4a8}.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(280px,1fr));gap:1em}
        .card{background:#fff;border-radius:6px;padding:.8em;box-shadow:0 1px 2px #0002;min-width:0}
        .card h3{margin:0 0 .4em}.facts{display:grid;grid-template-columns:minmax(0,11em) minmax(0,1fr);gap:.1em .8em;margin:0}
        .facts dt{color:#5b6475}.facts dd{margin:0;overflow-wrap:anywhere}
        figure{margin:.6em 0 0}figcaption{color:#5b6475;font-size:.85em}svg{width:100%;height:48px;display:block}
        .scroll{overflow-x:auto;max-width:100%;background:#fff;border-radius:6px}table{border-collapse:collapse;width:100%}
        th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e5ea;white-space:nowrap}
        .hash{font-family:monospace}.pass{color:#1b7f3b}.warn{color:#9a6700}.fail{color:#b42318}
        .note{color:#9a6700}p{margin:.3em 0;overflow-wrap:anywhere}code{overflow-wrap:anywhere}
        """

    /// The script.
    public static let script = """
        "use strict";
        function el(tag, attrs, children) {
          const node = document.createElement(tag);
          for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
          for (const child of [].concat(children === undefined ? [] : children)) {
            node.append(child instanceof Node ? child : document.createTextNode(String(child)));
          }
          return node;
        }
        function svgEl(tag, attrs) {
          const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
          for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
          return node;
        }
        const seconds = v => v === null || v === undefined ? "-" : v < 1 ? (v * 1000).toFixed(0) + " ms" : v.toFixed(2) + " s";
        const percent = v => v === null || v === undefined ? "-" : (v * 100).toFixed(2) + "%";
        function facts(pairs) {
          const list = el("dl", {class: "facts"});
          for (const [name, value, key] of pairs) {
            list.append(el("dt", {}, name), el("dd", key ? {"data-fact": key} : {}, value));
          }
          return list;
        }
        // One small chart: a bar per minute of the last hour, the series drawn over each other
        // (stacked when told), scaled to the largest value shown.
        function chart(caption, minutes, series, stacked) {
          const start = Date.now() - 3600e3;
          const svg = svgEl("svg", {viewBox: "0 0 300 48", preserveAspectRatio: "none", role: "img", "aria-label": caption});
          const total = m => series.reduce((sum, s) => sum + (m[s.key] || 0), 0);
          svg.append(svgEl("rect", {x: 0, y: 0, width: 300, height: 48, fill: "#f0f2f5"}));
          const top = Math.max(1e-9, ...minutes.map(m => stacked ? total(m) : Math.max(...series.map(s => m[s.key] || 0))));
          for (const m of minutes) {
            const x = Math.max(0, Math.min(295, (Date.parse(m.minute) - start) / 60e3 * 5));
            let base = 48;
            for (const s of series) {
              const height = (m[s.key] || 0) / top * 46;
              svg.append(svgEl("rect", {x: x, y: (stacked ? base : 48) - height, width: 4, height: height, fill: s.color}));
              if (stacked) base -= height;
            }
          }
          return el("figure", {}, [svg, el("figcaption", {}, caption + (minutes.length ? " (max " + top.toPrecision(3) + ")" : ": none yet"))]);
        }
        function pool(p) {
          const r = p.recommendation, m = p.measurement;
          return el("article", {class: "card", "data-pool": p.pool}, [el("h3", {}, "Pool " + p.pool), facts([
            ["ready / scheduled / running", p.ready + " / " + p.scheduled + " / " + p.running, "depth"],
            ["oldest wait", seconds(p.oldest_wait_seconds)],
            ["wait p50 / p95 (last minute)", seconds(p.wait_p50) + " / " + seconds(p.wait_p95)],
            ["finished (last hour)", p.finished_last_hour, "finished"],
            ["failure rate (last hour)", percent(p.failure_rate)],
            ["live hosts", p.live_hosts, "live"],
            ["speed per host", p.images_per_second ? p.images_per_second.toFixed(2) + " images/s" : "-"],
            ["arrivals (advisor, short / long window)", m ? p.arrivals_short.toFixed(2) + " / " + p.arrivals_long.toFixed(2) + " jobs/s" : "-"],
            ["hosts seen (advisor)", m ? m.live_workers : "-"],
            ["advisor", r ? r.stabilised + " " + r.instance_type + " hosts (needs " + r.desired + ", " + (r.live ?? "?") + " live)" : "no autoscaler in the last hour"],
            ["routing weight", p.routing_weight ?? "-"],
          ]),
          chart("jobs per minute, succeeded and failed, last hour", p.minutes, [{key: "succeeded", color: "#2563eb"}, {key: "failed", color: "#b42318"}], true),
          chart("queue wait p95 and p50, s", p.minutes, [{key: "wait_p95", color: "#e8b64c"}, {key: "wait_p50", color: "#1b7f3b"}], false)]);
        }
        function table(node, header, rows, empty) {
          node.replaceChildren(el("tr", {}, header.map(h => el("th", {}, h))));
          for (const [attrs, cells] of rows) node.append(el("tr", attrs, cells.map(c => el("td", {}, c))));
          if (!rows.length) node.append(el("tr", {}, el("td", {colspan: header.length}, empty)));
        }
        function agreement(name, a) {
          return a ? name + ": " + percent(a.rate) + " of " + a.trials + " pairs (" + percent(a.low) + "–" + percent(a.high) + ")" : name + ": no pair carries one";
        }
        function render(d) {
          document.getElementById("pools").replaceChildren(...(d.pools.length ? d.pools.map(pool) : [el("p", {}, "no pool has jobs or workers")]));
          const c = d.cutover;
          document.getElementById("cutover").replaceChildren(
            el("p", {}, c.from + " → " + c.to + ": " + c.current_percent.toFixed(0) + "% of the traffic on " + c.to),
            el("p", {"data-fact": "next-step"}, c.next_percent === null || c.next_percent === undefined ? "the move is complete"
              : "next step " + c.next_percent + "%: " + (c.next_allowed ? "allowed" : "held by the shadow comparison") + " — " + c.next_command));
          const s = d.shadow;
          document.getElementById("shadow").replaceChildren(
            el("p", {}, s.fraction === null || s.fraction === undefined ? "sampling off" : "sampling " + (s.fraction * 100) + "% of new jobs between " + s.pool_a + " and " + s.pool_b),
            el("p", {"data-fact": "decision"}, agreement("decision (food / not food)", s.decision)),
            el("p", {}, agreement("top-1", s.top1)),
            el("p", {}, s.pools.map(x => x.pool + " decodes " + x.decode_modes.join("/")).join("; ") || "no pairs yet"),
            ...s.warnings.map(w => el("p", {class: "note"}, "warning: " + w)),
            el("p", {"data-fact": "gate"}, "gate (" + s.gate + "): " + s.recommendation));
          table(document.getElementById("workers"), ["host", "pool", "model", "sha-256", "precision", "threads", "speed", "last seen", "version"],
            d.workers.map(w => [{"data-worker": w.id}, [w.host, w.pool, w.model,
              el("span", {class: "hash", title: w.model_sha256 || ""}, w.model_sha256 ? w.model_sha256.slice(0, 12) : "-"), w.precision || "-", w.cores,
              w.images_per_second ? w.images_per_second.toFixed(2) + "/s" : "-",
              Math.max(0, (Date.parse(d.generated_at) - Date.parse(w.last_seen)) / 1000).toFixed(0) + " s ago", w.version]]), "no live workers");
          table(document.getElementById("latest"), ["job", "pool", "state", "wait", "service", "finished", "error"],
            d.latest.map(j => [{"data-job": j.id}, [j.id, j.pool, el("span", {class: j.state === "failed" ? "fail" : ""}, j.state),
              seconds(j.wait_seconds), seconds(j.service_seconds),
              Math.max(0, (Date.parse(d.generated_at) - Date.parse(j.finished_at)) / 1000).toFixed(0) + " s ago", j.category || ""]]), "none yet");
          table(document.getElementById("failures"), ["pool", "category", "kind", "jobs", "latest job ids"],
            d.failures.map(f => [{}, [f.pool, f.category, f.kind || "-", f.jobs, f.latest_ids.join(", ")]]), "none");
          document.getElementById("health").replaceChildren(...d.health.map(h =>
            el("li", {}, [el("span", {class: h.verdict}, h.verdict), " " + h.name + ": " + h.evidence + (h.fix ? " — " + h.fix : "")])));
        }
        async function refresh() {
          const state = document.getElementById("state");
          try {
            const response = await fetch("/api/dashboard", {cache: "no-store", credentials: "same-origin"});
            if (!response.ok) throw new Error("HTTP " + response.status);
            const data = await response.json();
            render(data);
            state.textContent = "updated " + new Date(data.generated_at).toLocaleTimeString();
            state.className = "";
          } catch (error) {
            state.textContent = "not updating: " + error.message;
            state.className = "stale";
          }
        }
        refresh();
        setInterval(refresh, 1000);
        """
}
