package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteHTML writes the report as one self-contained page: inline SVG bar
// charts of the ratios against each baseline and of the subscription
// latency percentiles, then every figure in a table. No scripts, no
// external styles or fonts.
func (r *Report) WriteHTML(out io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lakestream bench</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:72em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.missed{color:#b00}.met{color:#070}.missing{color:#b60}
svg text{font:12px system-ui,sans-serif}
</style></head><body>
<h1>lakestream bench</h1>
<p>%s · %d CPUs (%s) · %s/%s · %s · sync=%s · codec=%s · %d run(s) per figure · %.0f s in all.<br>
Client, node and baselines run in one process on the same cores. Figures are the median of the runs, with min–max.</p>
`, esc(r.Started.Format("2006-01-02 15:04 MST")), m.CPUs, esc(m.CPUModel), esc(m.OS), esc(m.Arch), esc(m.Go),
		esc(r.Settings.Sync), esc(r.Settings.Codec), r.Settings.Runs, r.ElapsedS)
	b.WriteString("<h2>Ratios against each baseline</h2>\n")
	b.WriteString(ratioChart(r.Workloads))
	if lat := latencyChart(r.Workloads); lat != "" {
		b.WriteString("<h2>Subscription latency (ingest ack → row received)</h2>\n")
		b.WriteString(lat)
	}
	for _, w := range r.Workloads {
		writeWorkloadHTML(&b, w)
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(out, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }

func writeWorkloadHTML(b *strings.Builder, w *WorkloadReport) {
	fmt.Fprintf(b, "<h2>%s</h2>\n<p>%s</p>\n<table><tr><th>setting</th><th>system</th><th>metric</th><th>median</th><th>min–max</th><th>runs</th></tr>\n",
		esc(w.Name), esc(w.About))
	for _, f := range w.Figures {
		runs := make([]string, len(f.Runs))
		for i, v := range f.Runs {
			runs[i] = human(v)
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td class=n>%s %s</td><td class=n>%s–%s</td><td class=n>%s</td></tr>\n",
			esc(f.Group), esc(f.System), esc(f.Metric), human(f.Median), esc(f.Unit), human(f.Min), human(f.Max), esc(strings.Join(runs, ", ")))
	}
	b.WriteString("</table>\n")
	if len(w.Ratios) > 0 {
		b.WriteString("<table><tr><th>setting</th><th>ratio</th><th>median</th><th>min–max</th><th>target</th><th>reading</th></tr>\n")
		for _, x := range w.Ratios {
			verdict := ""
			if x.Met != nil {
				cls, word := "missed", "missed"
				if *x.Met {
					cls, word = "met", "met"
				}
				verdict = fmt.Sprintf("<span class=%s>%s %s</span>", cls, esc(x.Target), word)
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s / %s (%s)</td><td class=n>%.2f×</td><td class=n>%.2f–%.2f</td><td>%s</td><td>%s</td></tr>\n",
				esc(x.Group), esc(x.Of), esc(x.To), esc(x.Metric), x.Median, x.Min, x.Max, verdict, esc(x.Meaning))
		}
		b.WriteString("</table>\n")
	}
	if len(w.Missing)+len(w.Notes) > 0 {
		b.WriteString("<ul>\n")
		for _, ms := range w.Missing {
			fmt.Fprintf(b, "<li class=missing>%s — missing: %s</li>\n", esc(ms.Baseline), esc(ms.Reason))
		}
		for _, n := range w.Notes {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(n))
		}
		b.WriteString("</ul>\n")
	}
}

// Chart geometry: a label column, then the bars.
const (
	chartLabelW = 520
	chartBarW   = 420
	chartRowH   = 26
)

// ratioChart draws one bar per ratio with its min–max whisker, a dashed
// line at 1 (parity with the baseline) and a red tick at the target.
func ratioChart(ws []*WorkloadReport) string {
	type row struct {
		label string
		x     Ratio
	}
	var rows []row
	top := 1.0
	for _, w := range ws {
		for _, x := range w.Ratios {
			label := fmt.Sprintf("%s · %s: %s / %s", w.Name, x.Group, x.Of, x.To)
			if x.Metric != "throughput" && x.Metric != "time" { // latency: several percentiles per setting
				label += " (" + x.Metric + ")"
			}
			rows = append(rows, row{label, x})
			top = math.Max(top, math.Max(x.Max, x.goal))
		}
	}
	if len(rows) == 0 {
		return "<p>No ratios in this run.</p>\n"
	}
	top *= 1.15
	scale := func(v float64) float64 { return chartLabelW + v/top*chartBarW }
	h := len(rows)*chartRowH + 26
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="ratios">`+"\n", chartLabelW+chartBarW+90, h)
	one := scale(1)
	fmt.Fprintf(&b, `<text x="%.1f" y="12" text-anchor="middle">1× (parity)</text>`+"\n", one)
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="16" y2="%d" stroke="#555" stroke-dasharray="4 3"/>`+"\n", one, one, h)
	for i, rw := range rows {
		y := float64(i*chartRowH + 20)
		x := rw.x
		color := "#4a7bd0"
		if x.Met != nil && !*x.Met {
			color = "#d0704a"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", chartLabelW-8, y+14, esc(rw.label))
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.1f" height="16" fill="%s"/>`+"\n", chartLabelW, y+2, scale(x.Median)-chartLabelW, color)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#222"/>`+"\n", scale(x.Min), scale(x.Max), y+10, y+10)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f">%.2f×</text>`+"\n", math.Max(math.Max(scale(x.Max), scale(x.Median)), scale(x.goal))+6, y+14, x.Median)
		if x.goal > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#c00" stroke-width="2"><title>target %s</title></line>`+"\n",
				scale(x.goal), scale(x.goal), y, y+20, esc(x.Target))
		}
	}
	b.WriteString("</svg>\n<p>Blue: target met, or no target; orange: target missed; red tick: the target (issue 6). " +
		"Whiskers: min–max of the runs. Throughput ratios are better when higher, ratios of times (query) when lower.</p>\n")
	return b.String()
}

// latencyColors are the charted latency percentiles: from the ack, and
// (lighter) from the call's start.
var latencyColors = map[string]string{
	"p50": "#6aa84f", "p99": "#e69138", "p99.9": "#cc4125",
	"p50 from call": "#b6d7a8", "p99 from call": "#f9cb9c", "p99.9 from call": "#ea9999",
}

// latencyChart draws the percentiles of each subscription rate on a log
// scale, with min–max whiskers; "" without subscription figures.
func latencyChart(ws []*WorkloadReport) string {
	var rows []Figure
	lo, hi := math.Inf(1), 0.0
	for _, w := range ws {
		for _, f := range w.Figures {
			if _, ok := latencyColors[f.Metric]; ok && f.Unit == "ms" {
				rows = append(rows, f)
				for _, v := range []float64{f.Min, f.Median} {
					if v > 0 {
						lo = math.Min(lo, v)
					}
				}
				hi = math.Max(hi, f.Max)
			}
		}
	}
	if len(rows) == 0 {
		return ""
	}
	if math.IsInf(lo, 1) {
		lo = 0.1
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
	scale := func(v float64) float64 { // 0 (a receipt before the ack) sits at the axis
		v = math.Max(v, lo)
		return chartLabelW + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*chartBarW
	}
	h := len(rows)*chartRowH + 34
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="latency">`+"\n", chartLabelW+chartBarW+90, h)
	for i, f := range rows {
		y := float64(i*chartRowH + 4)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s · %s %s</text>`+"\n", chartLabelW-8, y+14, esc(f.Group), esc(f.System), esc(f.Metric))
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.1f" height="16" fill="%s"/>`+"\n", chartLabelW, y+2, scale(f.Median)-chartLabelW, latencyColors[f.Metric])
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#222"/>`+"\n", scale(f.Min), scale(f.Max), y+10, y+10)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f">%s ms</text>`+"\n", math.Max(scale(f.Max), scale(f.Median))+6, y+14, trim(f.Median))
	}
	axis := float64(len(rows)*chartRowH + 8)
	for v := lo; v <= hi*1.001; v *= 10 {
		x := scale(v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%.0f" stroke="#bbb" stroke-dasharray="2 3"/>`+"\n", x, x, axis)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s ms</text>`+"\n", x, axis+16, trim(v))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
