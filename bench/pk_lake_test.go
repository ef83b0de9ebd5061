package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestShortPKLake runs the short mode of the pklake workload: every side
// checks its rows (the lakes count one row per key, or every row; the
// union read agrees with DuckDB; pyiceberg reads every final row), so a
// wrong table fails the run. The log table's figures are always there;
// each primary-key figure is either measured, with its ratio, or reported
// missing with the round's error (a node that does not tier primary-key
// tables). Never timings.
func TestShortPKLake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"pklake"}, Baselines: []string{}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
	if len(rep.Workloads) != 1 {
		t.Fatalf("%d workloads reported", len(rep.Workloads))
	}
	w := rep.Workloads[0]
	has := func(system, metric string) bool {
		for _, f := range w.Figures {
			if f.System == system && f.Metric == metric {
				return len(f.Runs) > 0 && f.Median > 0
			}
		}
		return false
	}
	ratio := func(metric string) bool {
		for _, r := range w.Ratios {
			if r.Metric == metric && r.Median > 0 {
				return true
			}
		}
		return false
	}
	missing := func(what string) bool {
		for _, m := range w.Missing {
			if strings.Contains(m.Baseline, what) && m.Reason != "" {
				return true
			}
		}
		return false
	}
	if !has("log table", "per core") {
		t.Error("no tiering figure of the log table")
	}
	if !(has("primary-key table", "per core") && ratio("per core")) && !missing("(tiering)") {
		t.Error("the primary-key tiering is neither measured nor reported missing")
	}
	if !(has("duckdb", "time") && has("primary-key table", "time") && ratio("time")) && !missing("(union read and pyiceberg)") {
		t.Error("the union read and pyiceberg are neither measured nor reported missing")
	}
	if venvPython() != "" && !has("log table", "time") {
		t.Error("no pyiceberg figure of the log table")
	}
}
