package difftest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Running queries in child processes. A Lakestream bug can be a panic in a
// cgo callback, which no recover catches: it ends the process. Queries
// marked as known bugs therefore run in a child test binary (this binary,
// re-run with isolatedEnv set), which prints one outcome line per query; a
// query without an outcome line when the child dies is the one that crashed
// it, and the remaining queries run in a new child.

const (
	isolatedEnv   = "DIFFTEST_ISOLATED_QUERIES"
	outcomePrefix = "DIFFTEST-OUTCOME "
)

// fixtureTables is the tables a child process loads: those the queries it
// runs name (data generation is deterministic, so the rows are the same
// whatever is loaded). nil, for all tables, outside a child.
func fixtureTables() map[string]bool {
	names := os.Getenv(isolatedEnv)
	if names == "" {
		return nil
	}
	want := make(map[string]bool)
	for _, n := range strings.Split(names, ",") {
		want[n] = true
	}
	f, err := os.Open(corpusPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	qs, err := parseCorpus(bufio.NewScanner(f))
	if err != nil {
		return nil
	}
	only := make(map[string]bool)
	for _, q := range qs {
		if !want[q.name] {
			continue
		}
		sql := strings.ToLower(q.sql)
		for _, t := range dataset() {
			if strings.Contains(sql, strings.ToLower(t.name)) {
				only[t.name] = true
			}
		}
	}
	return only
}

type isolatedOutcome struct {
	Name    string
	Problem string
	Rows    int
}

// TestIsolatedQueries is the child side; it does nothing in a normal run.
func TestIsolatedQueries(t *testing.T) {
	names := os.Getenv(isolatedEnv)
	if names == "" {
		t.Skip("runs only as a child process of the corpus tests")
	}
	f := getFixture(t)
	byName := make(map[string]corpusQuery)
	for _, q := range loadCorpus(t) {
		byName[q.name] = q
	}
	for _, n := range strings.Split(names, ",") {
		q, ok := byName[n]
		if !ok {
			t.Fatalf("no corpus query %q", n)
		}
		o := runCorpusQuery(context.Background(), f, q)
		line, err := json.Marshal(isolatedOutcome{Name: n, Problem: o.problem, Rows: o.rows})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "%s%s\n", outcomePrefix, line)
	}
}

// runIsolated runs qs in child processes and returns their outcomes by
// name.
func runIsolated(qs []corpusQuery) (map[string]outcome, error) {
	out := make(map[string]outcome)
	var rest []string
	for _, q := range qs {
		rest = append(rest, q.name)
	}
	for len(rest) > 0 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIsolatedQueries$", "-test.count=1", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), isolatedEnv+"="+strings.Join(rest, ","))
		output, runErr := cmd.CombinedOutput()
		sc := bufio.NewScanner(bytes.NewReader(output))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), outcomePrefix)
			if !ok {
				continue
			}
			var o isolatedOutcome
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				return nil, fmt.Errorf("child outcome %q: %w", line, err)
			}
			out[o.Name] = outcome{problem: o.Problem, rows: o.Rows}
		}
		var left []string
		for _, n := range rest {
			if _, ok := out[n]; !ok {
				left = append(left, n)
			}
		}
		if len(left) == 0 {
			break
		}
		out[left[0]] = outcome{problem: fmt.Sprintf("the query crashed the process (%v):\n%s", runErr, crashSummary(output))}
		rest = left[1:]
	}
	return out, nil
}

// crashSummary is the part of a crashed child's output that says why: the
// panic, and the stack of the goroutine that panicked from its first frame
// outside the runtime and testing packages.
func crashSummary(output []byte) string {
	lines := strings.Split(strings.TrimSpace(string(output)), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "panic:") && !strings.HasPrefix(l, "fatal error:") {
			continue
		}
		keep := lines[i:min(len(lines), i+2)]
		for j := i + 2; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "github.com/") {
				keep = append(append(keep, "..."), lines[j:min(len(lines), j+12)]...)
				break
			}
		}
		return "  " + strings.Join(keep, "\n  ")
	}
	return "  " + strings.Join(lines[max(0, len(lines)-20):], "\n  ")
}
