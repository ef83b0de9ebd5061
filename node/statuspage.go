package node

import (
	"encoding/json"
	"net/http"
	"strings"
)

// statusPage serves the live status page: one HTML document with its
// style and script inline (the node may have no internet: no external
// asset), the Status of now embedded so the first paint needs no request,
// and a script that fetches /status.json every two seconds and redraws
// the numbers and the charts in place, without reloading the page.
// json.Marshal escapes '<', '>' and '&' in strings, so nothing of a table
// name or an error message can end the embedding script element; the
// script sets text with textContent only.
func (n *Node) statusPage(w http.ResponseWriter, r *http.Request) {
	raw, err := json.Marshal(n.status(r.Context()))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if _, err := w.Write([]byte(strings.Replace(statusHTML, "{{STATUS}}", string(raw), 1))); err != nil {
		n.cfg.Logger.Debug("status page", "error", err)
	}
}

const statusHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Lakestream</title>
<style>
:root{--fg:#1d2330;--mute:#6b7385;--line:#e3e6ec;--bg:#f6f7f9;--card:#fff;--accent:#2f6fde;--warn:#c77700;--bad:#c62d2d;--ok:#1f8a4c}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;align-items:baseline;gap:16px;flex-wrap:wrap;padding:14px 24px;background:#1d2330;color:#fff}
header h1{margin:0;font-size:18px;font-weight:600}
header .meta{color:#b8c0d0;font-size:13px}
header .meta b{color:#fff;font-weight:500}
#state{margin-left:auto;font-size:12px;padding:2px 8px;border-radius:10px;background:#2b3446;color:#b8c0d0}
#state.live{background:#1f8a4c;color:#fff}#state.down{background:var(--bad);color:#fff}
main{padding:18px 24px;max-width:1400px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:12px;margin-bottom:18px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card .label{color:var(--mute);font-size:12px}
.card .value{font-size:22px;font-weight:600;margin:2px 0 4px}
.card svg{display:block;width:100%;height:36px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px;margin-bottom:16px}
section h2{font-size:15px;margin:0 0 8px}
#buckets{margin-top:12px}
section p.note{color:var(--mute);margin:0 0 8px;font-size:12px}
table{border-collapse:collapse;width:100%}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{font-size:12px;color:var(--mute);font-weight:500}
th:first-child,td:first-child{text-align:left}
td.msg{text-align:left;white-space:normal;max-width:560px;overflow-wrap:anywhere}
td svg{width:120px;height:22px;vertical-align:middle}
.empty{color:var(--mute);text-align:left}
.bad{color:var(--bad)}.warn{color:var(--warn)}.ok{color:var(--ok)}
a{color:var(--accent)}
</style></head>
<body>
<header><h1>Lakestream</h1>
<span class="meta">version <b id="version"></b></span>
<span class="meta">up <b id="uptime"></b></span>
<span class="meta">Flight SQL <b id="flight"></b></span>
<span class="meta">data <b id="datadir"></b></span>
<span class="meta"><a href="/metrics" style="color:#9cc0ff">metrics</a> · <a href="/status.json" style="color:#9cc0ff">status.json</a></span>
<span id="state">loading</span></header>
<main>
<div class="cards" id="cards"></div>
<section><h2>Tables</h2>
<table id="tables"><thead><tr><th>table</th><th>rows</th><th>on disk</th><th>in lake</th><th>lake lag</th><th>ingest</th><th>last 5 min</th><th>scanned</th><th>subscribers</th><th>writes</th></tr></thead><tbody></tbody></table></section>
<section id="cluster" hidden><h2>Cluster</h2><p class="note" id="cluster-note"></p>
<table id="members"><thead><tr><th>node</th><th>state</th><th>flight</th><th>http</th><th>rack</th><th>marks</th></tr></thead><tbody></tbody></table>
<table id="buckets"><thead><tr><th>table</th><th>bucket</th><th>leader</th><th>epoch</th><th>replicas</th><th>in sync</th><th>this node</th></tr></thead><tbody></tbody></table></section>
<section><h2>Subscriptions</h2>
<table id="subs"><thead><tr><th>table</th><th>buckets</th><th>rows read</th><th>lag</th><th>open for</th></tr></thead><tbody></tbody></table></section>
<section><h2>Recent errors</h2><p class="note">The last failed requests, newest first; the request id is the one the client received (trailer lakestream-request-id) and the one in the server's log line.</p>
<table id="errors"><thead><tr><th>when</th><th>rpc</th><th>table</th><th>code</th><th>message</th><th>request id</th><th>peer</th><th>took</th></tr></thead><tbody></tbody></table></section>
<section><h2>Lake</h2>
<table id="lake"><thead><tr><th>table</th><th>bucket</th><th>tiered offset</th><th>log end</th><th>lag rows</th><th>lag</th><th>rounds</th><th>last error</th></tr></thead><tbody></tbody></table></section>
<section><h2>Memory</h2><table id="memory"><tbody></tbody></table></section>
<section><h2>Quarantined tables</h2><p class="note">Tables the node could not open at start-up, or whose lake is lost: reads and writes of them are refused. Repair the cause and restart, or drop the table.</p>
<table id="quarantined"><thead><tr><th>table</th><th>part</th><th>reason</th></tr></thead><tbody></tbody></table></section>
<section><h2>Data directories without a table</h2><p class="note">Kept, never deleted: they cannot be proven garbage (a lost catalog looks the same). See docs/architecture.md, Start-up.</p>
<table id="orphans"><tbody></tbody></table></section>
</main>
<script id="initial" type="application/json">{{STATUS}}</script>
<script>
"use strict";
const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
function bytes(n) {
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(Math.round(n)) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + " " + units[i];
}
function count(n) {
  const a = Math.abs(n);
  if (a < 10000) return Math.round(n).toLocaleString("en-US");
  for (const [d, s] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
    if (a >= d) { const v = n / d; return v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) + s; }
  }
  return String(n);
}
function rate(n, unit) {
  if (n === 0) return "0 " + unit + "/s";
  if (Math.abs(n) < 10) return n.toFixed(1) + " " + unit + "/s";
  return count(n) + " " + unit + "/s";
}
function duration(s) {
  if (s < 0.001) return Math.round(s * 1e6) + " µs";
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.round((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.round((s % 86400) / 3600) + " h";
}
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
const SVG = "http://www.w3.org/2000/svg";
// spark draws values as a filled line chart scaled to its largest value.
function spark(values, color) {
  const w = 200, h = 36, svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 " + w + " " + h);
  svg.setAttribute("preserveAspectRatio", "none");
  const n = values.length, top = Math.max(...values, 0);
  if (n < 2 || top <= 0) {
    const base = document.createElementNS(SVG, "line");
    for (const [k, v] of [["x1", 0], ["y1", h - 1], ["x2", w], ["y2", h - 1], ["stroke", "#d5d9e2"], ["stroke-width", 1]]) base.setAttribute(k, v);
    svg.append(base);
    return svg;
  }
  const pts = values.map((v, i) => [(i / (n - 1)) * w, h - 1 - (v / top) * (h - 4)]);
  const line = pts.map(p => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ");
  const area = document.createElementNS(SVG, "polygon");
  area.setAttribute("points", "0," + h + " " + line + " " + w + "," + h);
  area.setAttribute("fill", color); area.setAttribute("fill-opacity", "0.15");
  const pl = document.createElementNS(SVG, "polyline");
  pl.setAttribute("points", line); pl.setAttribute("fill", "none");
  pl.setAttribute("stroke", color); pl.setAttribute("stroke-width", "1.5");
  pl.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(area, pl);
  return svg;
}
function fill(id, rows, cols) {
  const body = document.querySelector("#" + id + " tbody");
  if (rows.length === 0) { body.replaceChildren(el("tr", {}, el("td", {class: "empty", colspan: cols}, "none"))); return; }
  body.replaceChildren(...rows);
}
function card(label, value, values, color, id) {
  return el("div", {class: "card", id: id}, el("div", {class: "label"}, label), el("div", {class: "value"}, value), spark(values, color));
}
function render(s) {
  document.getElementById("version").textContent = s.version;
  document.getElementById("uptime").textContent = duration(s.uptime_seconds);
  document.getElementById("flight").textContent = s.flight;
  document.getElementById("datadir").textContent = s.data_dir;
  const t = s.totals, sr = s.series;
  document.getElementById("cards").replaceChildren(
    card("ingest", rate(t.ingest_rows_per_second, "rows"), sr.ingest_rows, "#2f6fde", "card-ingest"),
    card("ingest bytes", bytes(t.ingest_bytes_per_second) + "/s", sr.ingest_bytes, "#6a4fd8", "card-ingest-bytes"),
    card("queries", rate(t.queries_per_second, "queries"), sr.queries, "#1f8a4c", "card-queries"),
    card("scanned", rate(t.scan_rows_per_second, "rows"), sr.scan_rows, "#c77700", "card-scanned"),
    card("errors (" + count(t.errors) + " since start)", rate(sr.errors.length ? sr.errors[sr.errors.length - 1] : 0, "errors"), sr.errors, "#c62d2d", "card-errors"),
    el("div", {class: "card"}, el("div", {class: "label"}, "tables · rows · on disk · in lake"),
      el("div", {class: "value"}, count(t.tables) + " · " + count(t.rows)),
      el("div", {class: "label"}, bytes(t.disk_bytes) + " on disk, " + bytes(t.lake_bytes) + " in the lake, " +
        count(t.subscriptions) + " subscriptions, " + count(t.prepared_statements) + " prepared")));
  fill("tables", s.tables.map(x => el("tr", {"data-table": x.name},
    el("td", {}, x.name), el("td", {class: "rows", "data-rows": x.rows}, count(x.rows)),
    el("td", {}, bytes(x.disk_bytes)),
    el("td", {}, x.datalake ? bytes(x.lake_bytes) + " · " + count(x.lake_rows) + " rows" : "off"),
    el("td", {class: x.freshness_lag_seconds > 300 ? "warn" : ""}, x.datalake ? (x.lag_rows ? count(x.lag_rows) + " rows, " + duration(x.freshness_lag_seconds) : "none") : "–"),
    el("td", {}, rate(x.ingest_rows_per_second, "rows")),
    el("td", {}, spark(x.ingest_series, "#2f6fde")),
    el("td", {}, rate(x.scan_rows_per_second, "rows")),
    el("td", {}, count(x.subscriptions)),
    el("td", {class: x.refusing_writes ? "bad" : "ok", title: x.refusing_writes || ""}, x.refusing_writes ? "refused" : "ok"))), 10);
  fill("subs", s.subscriptions.map(x => el("tr", {}, el("td", {}, x.table), el("td", {}, x.buckets.join(", ")),
    el("td", {}, count(x.read_rows)), el("td", {class: x.lag_rows > 0 ? "warn" : ""}, count(x.lag_rows) + " rows"), el("td", {}, duration(x.age_seconds)))), 5);
  fill("errors", s.errors.map(x => el("tr", {}, el("td", {}, new Date(x.time).toLocaleTimeString()), el("td", {}, x.rpc),
    el("td", {}, x.table || ""), el("td", {class: "bad"}, x.code), el("td", {class: "msg"}, x.message),
    el("td", {}, x.request_id), el("td", {}, x.peer), el("td", {}, duration(x.duration_seconds)))), 8);
  fill("lake", s.lake.map(x => el("tr", {}, el("td", {}, x.table), el("td", {}, x.bucket), el("td", {}, count(x.tiered_offset)),
    el("td", {}, count(x.log_end)), el("td", {}, count(x.lag_rows)), el("td", {}, duration(x.lag_seconds)), el("td", {}, count(x.rounds)),
    el("td", {class: "msg bad"}, x.last_error || ""))), 8);
  const m = s.memory;
  fill("memory", [["Go heap (live objects)", bytes(m.go_heap_bytes)], ["Go runtime total", bytes(m.go_total_bytes)],
    ["decoded-column cache", bytes(m.cache_bytes) + " of " + (m.cache_limit_bytes ? bytes(m.cache_limit_bytes) : "off")],
    ["result streams", bytes(m.stream_used_bytes) + " of " + bytes(m.stream_budget_bytes)],
    ["query engine limit", bytes(m.engine_limit_bytes)]].map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))), 2);
  fill("quarantined", s.quarantined.map(x => el("tr", {}, el("td", {}, x.table), el("td", {}, x.part), el("td", {class: "msg"}, x.reason))), 3);
  fill("orphans", s.orphans.map(d => el("tr", {}, el("td", {}, d))), 1);
  renderCluster(s.cluster);
}
function renderCluster(c) {
  const sec = document.getElementById("cluster");
  sec.hidden = !c;
  if (!c) return;
  document.getElementById("cluster-note").textContent = "This node: " + c.node_id + " · controller: " + (c.controller || "none") +
    " · " + count(c.buckets.length) + " buckets, " + count(c.under_replicated) + " under-replicated, " + count(c.offline) + " offline · " +
    "counted here: " + count(c.elections) + " elections (" + count(c.handoffs) + " hand-offs), in-sync sets " + count(c.isr_shrinks) +
    " shrunk, " + count(c.isr_expands) + " grown" + (c.meta_error ? " · metadata store: " + c.meta_error : "");
  fill("members", c.members.map(m => el("tr", {"data-node": m.id},
    el("td", {}, m.id), el("td", {class: m.state === "alive" ? "ok" : (m.state === "left" ? "" : "bad")}, m.state),
    el("td", {}, m.flight || ""), el("td", {}, m.http || ""), el("td", {}, m.rack || ""),
    el("td", {class: "warn"}, [m.draining ? "stopping" : "", m.decommissioned ? "decommissioned" : ""].filter(Boolean).join(", ")))), 6);
  fill("buckets", c.buckets.map(b => el("tr", {"data-bucket": b.table + "/" + b.bucket},
    el("td", {}, b.table), el("td", {}, b.bucket), el("td", {class: b.leader ? "leader" : "leader bad"}, b.leader || "offline"),
    el("td", {}, b.epoch), el("td", {}, b.replicas.join(", ")),
    el("td", {class: b.under_replicated ? "warn isr" : "isr"}, b.isr.join(", ")), el("td", {}, b.local_role))), 7);
}
const state = document.getElementById("state");
async function refresh() {
  try {
    const r = await fetch("/status.json", {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    state.textContent = "live · " + new Date().toLocaleTimeString();
    state.className = "live";
  } catch (e) {
    state.textContent = "node unreachable";
    state.className = "down";
  }
}
render(JSON.parse(document.getElementById("initial").textContent));
state.textContent = "live"; state.className = "live";
setInterval(refresh, 2000);
</script></body></html>
`
