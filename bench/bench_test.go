package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// TestShortRun runs the short mode of every workload end to end: a node,
// the ceiling and DuckDB in this process. It checks correctness only
// (every workload verifies its row counts and fails the run otherwise;
// the subscriber must receive every row exactly once), never timings.
func TestShortRun(t *testing.T) {
	out := t.TempDir()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Short: true, OutDir: out, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Workloads) != len(DefaultWorkloads) {
		t.Fatalf("%d workloads reported, want %d", len(rep.Workloads), len(DefaultWorkloads))
	}
	for i, w := range rep.Workloads {
		if w.Name != DefaultWorkloads[i] {
			t.Errorf("workload %d is %q, want %q", i, w.Name, DefaultWorkloads[i])
		}
		if len(w.Figures) == 0 {
			t.Errorf("%s: no figures", w.Name)
		}
		for _, f := range w.Figures {
			if len(f.Runs) == 0 || f.Min > f.Median || f.Median > f.Max || f.Median < 0 {
				t.Errorf("%s: figure %+v is not a summary of its runs", w.Name, f)
			}
		}
	}
	for _, name := range []string{"ingest", "scan", "query"} {
		if w := rep.Workloads[indexOf(DefaultWorkloads, name)]; len(w.Ratios) == 0 {
			t.Errorf("%s: no ratio to a baseline", name)
		}
	}
	checkBaselines(t, rep)
	// PostgreSQL starts in seconds wherever its binaries are; Kafka and
	// Fluss run only when their jars are cached (the short mode does not
	// fetch them). Either way each is reported.
	if fileExists(filepath.Join(postgresBinDir(), "initdb")) {
		wantRatio(t, rep, "ingest", "postgresql")
		wantRatio(t, rep, "query", "postgresql")
	}
	if _, _, err := kafkaJars(defaultKafkaDir()); err == nil {
		wantRatio(t, rep, "ingest", "kafka")
		wantRatio(t, rep, "subscribe", "kafka")
	}
	if _, _, err := flussJars(defaultCacheDir("fluss")); err == nil {
		wantRatio(t, rep, "ingest", "fluss")
		wantRatio(t, rep, "subscribe", "fluss")
	}
	checkFiles(t, out)
	t.Logf("progress:\n%s", progress.String())
	if !strings.Contains(progress.String(), "subscribe") {
		t.Errorf("progress output lacks the subscribe workload:\n%s", progress.String())
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
	for _, want := range []string{"INGEST", "lakestream / ceiling", "lakestream / duckdb", "p99"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
}

// checkBaselines: every baseline is, in every workload that uses it,
// either measured (a ratio to it) or reported missing with a reason, never
// left out.
func checkBaselines(t *testing.T, rep *Report) {
	t.Helper()
	for _, w := range rep.Workloads {
		for _, b := range Baselines {
			if !slices.Contains(baselineUsers[b], w.Name) {
				continue
			}
			measured := slices.ContainsFunc(w.Ratios, func(r Ratio) bool { return r.To == baselineSystems[b] })
			missing := slices.ContainsFunc(w.Missing, func(m Missing) bool { return m.Baseline == baselineTitles[b] && m.Reason != "" })
			if measured == missing {
				t.Errorf("%s: baseline %s measured=%v, reported missing with a reason=%v: want exactly one", w.Name, b, measured, missing)
			}
		}
	}
}

// wantRatio: workload w has a ratio of Lakestream to system.
func wantRatio(t *testing.T, rep *Report, w, system string) {
	t.Helper()
	for _, wr := range rep.Workloads {
		if wr.Name == w && !slices.ContainsFunc(wr.Ratios, func(r Ratio) bool { return r.To == system }) {
			t.Errorf("%s: no ratio to %s; missing: %+v", w, system, wr.Missing)
		}
	}
}

// TestBaselinesMissing: a baseline that is not selected, or that cannot
// start (here Kafka and Fluss, without jars in the short mode, which does
// not fetch them), is reported as missing with the reason, and the run goes
// on.
func TestBaselinesMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jars := t.TempDir()
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"ingest"}, Baselines: []string{"kafka", "fluss"}, KafkaDir: jars, FlussDir: jars})
	if err != nil {
		t.Fatal(err)
	}
	checkBaselines(t, rep)
	why := map[string]string{}
	for _, m := range rep.Workloads[0].Missing {
		why[m.Baseline] = m.Reason
	}
	for b, want := range map[string]string{"postgres": "not selected", "kafka": "jars not cached in " + jars, "fluss": "jars not cached in " + jars} {
		if got := why[baselineTitles[b]]; !strings.Contains(got, want) {
			t.Errorf("%s: missing reason %q, want it to say %q", b, got, want)
		}
	}
	var none Config
	none.Baselines = []string{}
	none.EnsureDefaults()
	if len(none.Baselines) != 0 {
		t.Errorf("an empty Baselines became %v, want none", none.Baselines)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// checkFiles: results.json reads back as a Report, results.html is one
// page with its charts inline and nothing fetched from elsewhere.
func checkFiles(t *testing.T, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(back.Workloads) != len(DefaultWorkloads) || back.Machine.CPUs == 0 {
		t.Errorf("results.json: %d workloads, machine %+v", len(back.Workloads), back.Machine)
	}
	page, err := os.ReadFile(filepath.Join(dir, "results.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "<svg"); n != 2 {
		t.Errorf("results.html has %d charts, want 2 (ratios, latency)", n)
	}
	for _, bad := range []string{"<script", "<link", "src=", "@import"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("results.html is not self-contained: it has %q", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Workloads: []string{"ingest", "nope", "ingest"}, Rows: -1, BatchRows: []int{0}, Writers: 1000,
		Runs: -2, Sync: "sometimes", Codec: "gzip", Duration: time.Millisecond, Baselines: []string{"oracle", "kafka", "kafka"}}
	c.EnsureDefaults()
	err := c.Validate()
	for _, want := range []string{`"nope"`, "twice", "rows -1", "batch rows 0", "writers 1000", "runs -2", "sometimes", "gzip", "duration",
		`baseline "oracle"`, `baseline "kafka" given twice`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate error %v lacks %q", err, want)
		}
	}
	pk := Config{PKRows: 10, PKKeys: 20, PKBatchRows: 8, PKBatchKeys: 30, PKClients: 300, PKDuration: time.Millisecond}
	pk.EnsureDefaults()
	err = pk.Validate()
	for _, want := range []string{"pk rows 10: want at least pk keys (20)", "pk batch rows 8: want 1 to pk keys / writers (5)",
		"pk batch keys 30", "pk clients 300", "pk duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate error %v lacks %q", err, want)
		}
	}
	var d Config
	d.EnsureDefaults()
	if err := d.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if d.Runs != 3 || d.Sync != "always" || d.Rate != 10_000 || d.SubscribeBatchRows != 500 {
		t.Errorf("defaults: %+v", d)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		runs             []float64
		med, least, most float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{7}, 7, 7, 7},
	} {
		s := summarize(tc.runs)
		if s.Median != tc.med || s.Min != tc.least || s.Max != tc.most || len(s.Runs) != len(tc.runs) || s.Runs[0] != tc.runs[0] {
			t.Errorf("summarize(%v) = %+v", tc.runs, s)
		}
	}
	if got := ratios([]float64{2, 3, 4}, []float64{1, 0, 2}); len(got) != 2 || got[0] != 2 || got[1] != 2 {
		t.Errorf("ratios = %v, want [2 2] (a zero denominator is skipped)", got)
	}
}

func TestEventsDeterministic(t *testing.T) {
	a, b := events(100, 50), events(100, 50)
	defer a.Release()
	defer b.Release()
	if a.NumRows() != 50 || arrowmsg.RecordBytes(a) != arrowmsg.RecordBytes(b) {
		t.Fatalf("rows %d, bytes %d vs %d", a.NumRows(), arrowmsg.RecordBytes(a), arrowmsg.RecordBytes(b))
	}
	for c := range a.NumCols() {
		if got, want := a.Column(int(c)).String(), b.Column(int(c)).String(); got != want {
			t.Fatalf("column %d differs between two generations", c)
		}
	}
}

// TestPKShortRun runs the pk workload end to end at tiny sizes: upserts
// (the state checked: one row per key), point and batch lookups (every
// returned row checked against its key), the aggregate (every system the
// same answer, counting every key once), the key index's size. It checks
// correctness and that each figure is reported, never timings.
func TestPKShortRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"pk"}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if len(rep.Workloads) != 1 || rep.Workloads[0].Name != "pk" {
		t.Fatalf("workloads %+v, want pk", rep.Workloads)
	}
	w := rep.Workloads[0]
	checkBaselines(t, rep)
	has := func(groupPrefix, system, metric string) bool {
		return slices.ContainsFunc(w.Figures, func(f Figure) bool {
			return strings.HasPrefix(f.Group, groupPrefix) && f.System == system && f.Metric == metric && len(f.Runs) > 0 && f.Median > 0
		})
	}
	for _, want := range [][3]string{
		{"upsert", "lakestream", "throughput"},
		{"point lookup", "lakestream", "throughput"}, {"point lookup", "lakestream", "p99"}, {"point lookup", "lakestream", "RPCs"},
		{"point lookup", "no-op rpc", "throughput"}, {"point lookup", "no-op rpc", "RPCs"},
		{"batch lookup", "lakestream", "throughput"}, {"batch lookup", "lakestream", "RPCs"},
		{"aggregate", "lakestream", "time"}, {"aggregate", "duckdb", "time"},
		{"footprint after the upserts", "lakestream", "key index on disk per million keys"},
	} {
		if !has(want[0], want[1], want[2]) {
			t.Errorf("no %s figure %s %s", want[0], want[1], want[2])
		}
	}
	// A prepared execution is bind (DoPut), GetFlightInfo and DoGet; the
	// no-op is one RPC.
	for _, f := range w.Figures {
		if f.Metric == "RPCs" && f.System == "lakestream" && f.Median != 3 {
			t.Errorf("%s: %v RPCs per lookup, want 3 (bind, execute, fetch)", f.Group, f.Median)
		}
		if f.Metric == "RPCs" && f.System == "no-op rpc" && f.Median != 1 {
			t.Errorf("%s: the no-op took %v RPCs, want 1", f.Group, f.Median)
		}
	}
	if !slices.ContainsFunc(w.Missing, func(m Missing) bool { return m.Baseline == pkFlussTitle && m.Reason != "" }) {
		t.Errorf("Fluss not reported missing with a reason: %+v", w.Missing)
	}
	if fileExists(filepath.Join(postgresBinDir(), "initdb")) {
		for _, g := range []string{"upsert", "point lookup", "batch lookup", "aggregate"} {
			if !slices.ContainsFunc(w.Ratios, func(r Ratio) bool { return strings.HasPrefix(r.Group, g) && r.To == "postgresql" }) {
				t.Errorf("%s: no ratio to postgresql; missing: %+v", g, w.Missing)
			}
		}
		if !has("point lookup", "postgresql", "socket writes") {
			t.Errorf("no socket writes per PostgreSQL lookup")
		}
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
}

// TestPKShortRunProfiled is the short pk run with -cpuprofile: a profile
// of each Lakestream side and its CPU per call.
func TestPKShortRunProfiled(t *testing.T) {
	if testing.Short() {
		t.Skip("profiles each pk figure for 5 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	base := filepath.Join(t.TempDir(), "cpu.out")
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"pk"}, Baselines: []string{}, CPUProfile: base, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	for _, which := range []string{"point", "batch", "aggregate"} {
		if !fileExists(strings.TrimSuffix(base, ".out") + "-pk-" + which + ".out") {
			t.Errorf("no %s profile", which)
		}
	}
	n := 0
	for _, f := range rep.Workloads[0].Figures {
		if f.Metric == "process CPU per call (client and node)" && f.Median > 0 {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d CPU-per-call figures, want 3", n)
	}
}

// TestShortCluster runs the short mode of the cluster workload: a
// three-node cluster in this process, ingest into the bucket's leader (the
// row count checked on it), and every row of a subscription on the leader
// and on a follower received exactly once. Kafka on three brokers runs
// only when its jars are cached (the short mode does not fetch them);
// either way it is reported.
func TestShortCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Workloads) != 1 || rep.Workloads[0].Name != "cluster" {
		t.Fatalf("workloads %+v, want cluster", rep.Workloads)
	}
	w := rep.Workloads[0]
	systems := map[string]bool{}
	for _, f := range w.Figures {
		systems[f.System] = true
	}
	for _, s := range []string{systemSingle, systemCluster, systemFollower} {
		if !systems[s] {
			t.Errorf("no figure of %s: %+v", s, w.Figures)
		}
	}
	wantRatio(t, rep, "cluster", systemSingle)
	checkBaselines(t, rep)
	if _, _, err := kafkaJars(defaultKafkaDir()); err == nil {
		wantRatio(t, rep, "cluster", baselineSystems["kafka3"])
	}
}
