package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestShortLake runs the short mode of the lake workloads alone (TestShortRun
// runs them too, among all the others): the tiering rounds must tier every
// row, the union must hold its split (90% in the lake, 10% in the log tail),
// and Lakestream and DuckDB must give the same answers. It checks the shape
// of the report, never timings.
func TestShortLake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"tiering", "union"}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
	if len(rep.Workloads) != 2 {
		t.Fatalf("%d workloads reported, want 2", len(rep.Workloads))
	}
	ratios := map[string]bool{}
	for _, w := range rep.Workloads {
		for _, f := range w.Figures {
			if len(f.Runs) == 0 || f.Min > f.Median || f.Median > f.Max || f.Median < 0 {
				t.Errorf("%s: figure %+v is not a summary of its runs", w.Name, f)
			}
		}
		for _, r := range w.Ratios {
			if r.Median <= 0 {
				t.Errorf("%s: ratio %+v", w.Name, r)
			}
			ratios[w.Name+": "+r.Of+" / "+r.To+" ("+r.Metric+")"] = true
		}
	}
	for _, want := range []string{
		"tiering: lakestream / pqarrow (throughput)",
		"tiering: lakestream / pqarrow (per CPU-second)",
		"tiering: rounds 51–60 / rounds 1–10 (commit)",
		"tiering: rounds 51–60 / rounds 1–10 (plan)",
		"tiering: rounds 51–60 / rounds 26–35 (commit)",
		"tiering: passes 4–6 / passes 1–3 (maintenance)",
		"union: lakestream / duckdb-parquet (time)",
	} {
		if !ratios[want] {
			t.Errorf("no ratio %q; have %v", want, ratios)
		}
	}
	cold := 0
	for _, r := range rep.Workloads[1].Ratios {
		if strings.HasSuffix(r.Group, ", cold") && r.To == "duckdb-parquet" {
			cold++
		}
	}
	if cold != len(unionQueries) {
		t.Errorf("%d cold union ratios, want %d", cold, len(unionQueries))
	}
	for _, want := range []string{"with maintenance, after 60 rounds", "without maintenance, after 60 rounds", "6 maintenance passes"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks the note %q", want)
		}
	}
}

func TestProfilePath(t *testing.T) {
	for base, want := range map[string]string{"cpu.out": "cpu-q1.out", "/tmp/p/cpu": "/tmp/p/cpu-q1", "a.b/c.pprof": "a.b/c-q1.pprof"} {
		if got := profilePath(base, 0); got != want {
			t.Errorf("profilePath(%q) = %q, want %q", base, got, want)
		}
	}
}
