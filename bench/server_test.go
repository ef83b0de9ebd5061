package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary be the benchmark's server process: run
// as "<test binary> bench-server ...", it is what `lakestream
// bench-server` is (ServeChild).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-server" {
		if err := ServeChild(os.Args[2:], os.Stderr); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestShortRunServerProcesses runs ingest and scan with the node and the
// ceiling in child processes: the figures are as in process, plus each
// server's CPU per million rows for Lakestream and the ceiling, and the
// CPU profile of each process.
func TestShortRunServerProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prof := filepath.Join(t.TempDir(), "server.pprof")
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"ingest", "scan"}, Baselines: []string{},
		ServerCommand: []string{os.Args[0], "bench-server"}, ServerCPUProfile: prof})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Workloads {
		for _, sys := range []string{"lakestream", "ceiling"} {
			i := slices.IndexFunc(w.Figures, func(f Figure) bool { return f.System == sys && f.Metric == serverCPU })
			if i < 0 {
				t.Errorf("%s: no %s figure of %s", w.Name, serverCPU, sys)
				continue
			}
			if f := w.Figures[i]; f.Unit != cpuUnit || len(f.Runs) != 1 || f.Median < 0 {
				t.Errorf("%s: %s figure %+v", w.Name, sys, f)
			}
		}
		if !slices.ContainsFunc(w.Ratios, func(r Ratio) bool { return r.Metric == serverCPU && r.To == "ceiling" }) {
			t.Errorf("%s: no %s ratio to the ceiling", w.Name, serverCPU)
		}
		if slices.Contains(w.Notes, cpuMissing) {
			t.Errorf("%s: notes %q with the servers in processes of their own", w.Name, cpuMissing)
		}
	}
	for _, p := range []string{prof, strings.TrimSuffix(prof, ".pprof") + "-ceiling.pprof"} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("CPU profile %s: %v (size %v)", p, err, st)
		}
	}
}

// TestShortRunInProcessNotesCPU: with the servers in this process, the
// CPU figures are missing and the report says why.
func TestShortRunInProcessNotesCPU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Short: true, Workloads: []string{"ingest"}, Baselines: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Workloads[0]
	if slices.ContainsFunc(w.Figures, func(f Figure) bool { return f.Metric == serverCPU }) || !slices.Contains(w.Notes, cpuMissing) {
		t.Errorf("in process: figures %+v, notes %q; want no CPU figure and the note", w.Figures, w.Notes)
	}
}

func TestParseProcStatCPU(t *testing.T) {
	for _, tc := range []struct {
		line string
		want float64
		bad  bool
	}{
		// utime 1234, stime 66: 13 s.
		{line: "4242 (lakestream) S 1 4242 4242 0 -1 4194560 3063 0 0 0 1234 66 0 0 20 0 12 0 100 0 0\n", want: 13},
		// A command with spaces and a parenthesis.
		{line: "7 (a b) c) R 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 5 0 0", want: 3},
		{line: "7 (short) R 1 7", bad: true},
		{line: "no command", bad: true},
		{line: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u s 0", bad: true},
	} {
		got, err := parseProcStatCPU([]byte(tc.line))
		if tc.bad != (err != nil) || (!tc.bad && got != tc.want) {
			t.Errorf("%q: %v, %v; want %v, error %v", tc.line, got, err, tc.want, tc.bad)
		}
	}
	// This process's own line parses, and its CPU time only grows.
	a, err := childCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := childCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if b < a {
			t.Fatalf("CPU went back from %v to %v", a, b)
		}
		if b > a || time.Now().After(deadline) {
			break
		}
	}
}
