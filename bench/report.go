package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of Run: results.json is this struct.
type Report struct {
	Started   time.Time         `json:"started"`
	ElapsedS  float64           `json:"elapsed_s"`
	Machine   Machine           `json:"machine"`
	Settings  Settings          `json:"settings"`
	Workloads []*WorkloadReport `json:"workloads"`
}

// Machine is where the figures come from. Client, node and baselines run
// in one process, on the same cores.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Go       string `json:"go"`
}

// Settings are the Config values that shape the figures.
type Settings struct {
	Workloads          []string `json:"workloads"`
	Rows               int      `json:"rows"`
	QueryRows          int      `json:"query_rows"`
	BatchRows          []int    `json:"batch_rows"`
	Writers            int      `json:"writers"`
	Runs               int      `json:"runs"`
	Rate               int      `json:"rate"`
	SubscribeBatchRows int      `json:"subscribe_batch_rows"`
	DurationS          float64  `json:"duration_s"`
	Sync               string   `json:"sync"`
	Codec              string   `json:"codec"`
	Short              bool     `json:"short"`
	Baselines          []string `json:"baselines"`
}

// WorkloadReport is one workload's figures, the ratios between them, and
// the baselines it could not measure.
type WorkloadReport struct {
	Name    string    `json:"name"`
	About   string    `json:"about"`
	Figures []Figure  `json:"figures"`
	Ratios  []Ratio   `json:"ratios"`
	Missing []Missing `json:"missing,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// Figure is one measured quantity over Config.Runs runs.
type Figure struct {
	// Group is the setting measured ("65,536-row batches, 4 writers").
	Group string `json:"group"`
	// System is "lakestream" or a baseline ("ceiling", "duckdb", ...).
	System string `json:"system"`
	// Metric is what was measured: "throughput", "time", "p99", "rate".
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Stat
}

// Ratio is Lakestream's figure over a baseline's, run by run.
type Ratio struct {
	Group    string `json:"group"`
	Of       string `json:"of"`
	To       string `json:"to"`
	Metric   string `json:"metric"`
	Meaning  string `json:"meaning"` // how to read it: "higher is better" ...
	Stat            // of the per-run ratios
	Target   string `json:"target,omitempty"` // e.g. ">= 0.7", from the issue
	Met      *bool  `json:"met,omitempty"`
	goal     float64
	goalHigh bool
}

// Missing is a baseline the run did not measure, and why.
type Missing struct {
	Baseline string `json:"baseline"`
	Reason   string `json:"reason"`
}

func (w *WorkloadReport) figure(group, system, metric, unit string, runs []float64) {
	w.Figures = append(w.Figures, Figure{Group: group, System: system, Metric: metric, Unit: unit, Stat: summarize(runs)})
}

// ratio adds of/to run by run. atLeast > 0 sets a target "≥ atLeast";
// atMost > 0 a target "≤ atMost".
func (w *WorkloadReport) ratio(group, of, to, metric, meaning string, num, den []float64, atLeast, atMost float64) {
	r := Ratio{Group: group, Of: of, To: to, Metric: metric, Meaning: meaning, Stat: summarize(ratios(num, den))}
	switch {
	case atLeast > 0:
		r.Target, r.goal, r.goalHigh = fmt.Sprintf(">= %g", atLeast), atLeast, true
		met := r.Median >= atLeast
		r.Met = &met
	case atMost > 0:
		r.Target, r.goal = fmt.Sprintf("<= %g", atMost), atMost
		met := r.Median <= atMost
		r.Met = &met
	}
	w.Ratios = append(w.Ratios, r)
}

func (w *WorkloadReport) missing(baseline, reason string) {
	w.Missing = append(w.Missing, Missing{Baseline: baseline, Reason: reason})
}

// WriteText prints the report as aligned tables.
func (r *Report) WriteText(out io.Writer) error {
	m := r.Machine
	fmt.Fprintf(out, "lakestream bench: %d CPUs (%s), %s/%s, %s; sync=%s codec=%s runs=%d; %.0f s\n",
		m.CPUs, m.CPUModel, m.OS, m.Arch, m.Go, r.Settings.Sync, r.Settings.Codec, r.Settings.Runs, r.ElapsedS)
	fmt.Fprintln(out, "client, node and baselines share these cores; figures are median (min–max) of the runs")
	for _, w := range r.Workloads {
		fmt.Fprintf(out, "\n%s: %s\n", strings.ToUpper(w.Name), w.About)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		for _, f := range w.Figures {
			fmt.Fprintf(tw, "  %s\t%s %s\t%s %s\t(%s–%s)\t\n", f.Group, f.System, f.Metric,
				human(f.Median), f.Unit, human(f.Min), human(f.Max))
		}
		for _, x := range w.Ratios {
			verdict := ""
			if x.Met != nil {
				verdict = "target " + x.Target + ": " + map[bool]string{true: "met", false: "MISSED"}[*x.Met]
			}
			fmt.Fprintf(tw, "  %s\t%s / %s (%s)\t%.2f×\t(%.2f–%.2f)\t%s\n", x.Group, x.Of, x.To, x.Metric,
				x.Median, x.Min, x.Max, verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, ms := range w.Missing {
			fmt.Fprintf(out, "  %s: missing: %s\n", ms.Baseline, ms.Reason)
		}
		for _, n := range w.Notes {
			fmt.Fprintf(out, "  note: %s\n", n)
		}
	}
	return nil
}

// human formats a figure with three significant digits and a k/M suffix.
func human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// writeFiles writes results.json and results.html into dir.
func (r *Report) writeFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output dir: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "results.html"))
	if err != nil {
		return err
	}
	if err := r.WriteHTML(f); err != nil {
		f.Close()
		return fmt.Errorf("results.html: %w", err)
	}
	return f.Close()
}
