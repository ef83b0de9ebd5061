package difftest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The corpus, testdata/corpus.sql: one query per statement, each ending
// with ";" at the end of a line, each preceded by directives:
//
//	-- name: join_left_customers        required, unique
//	-- ordered                          the ORDER BY orders every row: compare in order
//	-- args: 42, 'paid', 1.5, NULL      positional parameters (? or $1), bound on both
//	                                    sides; also true/false and ts'<RFC 3339>'
//	-- empty                            the result is empty on purpose
//	-- error                            both sides must fail
//	-- bug: <what is wrong>             a known Lakestream bug: reported as such
//
// Other "--" lines are comments. Every query must return rows unless marked
// empty, so that no query compares nothing by accident.
//
// DIFFTEST_SKIP_KNOWN_BUGS=1 skips the queries marked as known bugs, for a
// run that should only show new differences.

const corpusPath = "testdata/corpus.sql"

type corpusQuery struct {
	name    string
	line    int
	sql     string
	args    []any
	ordered bool
	empty   bool
	isError bool
	bug     string
}

func loadCorpus(t testing.TB) []corpusQuery {
	t.Helper()
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := parseCorpus(bufio.NewScanner(f))
	if err != nil {
		t.Fatalf("%s: %v", corpusPath, err)
	}
	return qs
}

// parseCorpus reads the corpus format above.
func parseCorpus(sc *bufio.Scanner) ([]corpusQuery, error) {
	var out []corpusQuery
	var cur corpusQuery
	var sql []string
	seen := make(map[string]bool)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if len(sql) == 0 && strings.HasPrefix(trimmed, "--") {
			if err := cur.directive(strings.TrimSpace(strings.TrimPrefix(trimmed, "--"))); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			continue
		}
		if len(sql) == 0 && trimmed == "" {
			continue
		}
		if len(sql) == 0 {
			cur.line = n
		}
		sql = append(sql, line)
		if !strings.HasSuffix(trimmed, ";") {
			continue
		}
		cur.sql = strings.TrimSuffix(strings.TrimSpace(strings.Join(sql, "\n")), ";")
		switch {
		case cur.name == "":
			return nil, fmt.Errorf("line %d: query without -- name:", cur.line)
		case seen[cur.name]:
			return nil, fmt.Errorf("line %d: duplicate name %q", cur.line, cur.name)
		}
		seen[cur.name] = true
		out = append(out, cur)
		cur, sql = corpusQuery{}, nil
	}
	if len(sql) > 0 {
		return nil, fmt.Errorf("line %d: statement %q does not end with ;", cur.line, cur.name)
	}
	return out, sc.Err()
}

func (q *corpusQuery) directive(d string) error {
	key, val, _ := strings.Cut(d, ":")
	val = strings.TrimSpace(val)
	switch strings.TrimSpace(key) {
	case "name":
		if q.name != "" {
			return fmt.Errorf("second name %q for %q", val, q.name)
		}
		q.name = val
	case "ordered":
		q.ordered = true
	case "empty":
		q.empty = true
	case "error":
		q.isError = true
	case "bug":
		q.bug = val
	case "args":
		args, err := parseArgs(val)
		if err != nil {
			return err
		}
		q.args = args
	}
	return nil
}

// parseArgs parses a comma-separated argument list; see the format above.
func parseArgs(s string) ([]any, error) {
	var out []any
	rest := strings.TrimSpace(s)
	for rest != "" {
		n := argLen(rest)
		if n < 0 {
			return nil, fmt.Errorf("args: unterminated string in %q", s)
		}
		v, err := parseArg(strings.TrimSpace(rest[:n]))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		rest = strings.TrimSpace(rest[n:])
		if rest != "" && !strings.HasPrefix(rest, ",") {
			return nil, fmt.Errorf("args: want a comma before %q", rest)
		}
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return out, nil
}

// argLen is the length of the argument s starts with: up to the next comma
// outside quotes; -1 for an unterminated quote.
func argLen(s string) int {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\'' && quoted && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == '\'':
			quoted = !quoted
		case s[i] == ',' && !quoted:
			return i
		}
	}
	if quoted {
		return -1
	}
	return len(s)
}

func parseArg(tok string) (any, error) {
	switch {
	case strings.EqualFold(tok, "null"):
		return nil, nil
	case tok == "true" || tok == "false":
		return tok == "true", nil
	case strings.HasPrefix(tok, "ts'"):
		return time.Parse(time.RFC3339Nano, strings.Trim(tok[2:], "'"))
	case strings.HasPrefix(tok, "'"):
		return strings.ReplaceAll(tok[1:len(tok)-1], "''", "'"), nil
	}
	if i, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return i, nil
	}
	if f, err := strconv.ParseFloat(tok, 64); err == nil {
		return f, nil
	}
	return nil, fmt.Errorf("args: cannot parse %q", tok)
}

// outcome is what running one corpus query showed.
type outcome struct {
	problem string // "" when the query passed
	rows    int    // rows of the reference result
}

// runCorpusQuery runs q on both sides and compares.
func runCorpusQuery(ctx context.Context, f *fixture, q corpusQuery) outcome {
	want, werr := f.ref.query(q.sql, q.args)
	got, gerr := lakeQuery(ctx, f.eng, q.sql, q.args)
	switch {
	case q.isError:
		if werr == nil || gerr == nil {
			return outcome{problem: fmt.Sprintf("want both sides to fail; reference error: %v; lakestream error: %v", werr, gerr)}
		}
		return outcome{}
	case werr != nil:
		return outcome{problem: fmt.Sprintf("the reference fails (fix the corpus): %v", werr)}
	case gerr != nil:
		return outcome{problem: fmt.Sprintf("lakestream fails, the reference returns %d rows: %v", len(want.rows), gerr), rows: len(want.rows)}
	}
	o := outcome{rows: len(want.rows), problem: diff(got, want, q.ordered)}
	if o.problem == "" && len(want.rows) == 0 && !q.empty {
		o.problem = "the reference returns no rows: the query compares nothing (mark it -- empty if meant)"
	}
	return o
}

// report reports the outcome of q on t; true when it passed.
func report(t *testing.T, q corpusQuery, o outcome) bool {
	t.Helper()
	where := fmt.Sprintf("%s:%d", corpusPath, q.line)
	switch {
	case q.bug != "" && o.problem != "":
		t.Errorf("KNOWN LAKESTREAM BUG (%s) — %s\n%s\n%s", where, q.bug, q.sql, o.problem)
	case q.bug != "":
		t.Errorf("%s is marked as a known bug (%s) but passes now: remove its -- bug line", where, q.bug)
	case o.problem != "":
		t.Errorf("MISMATCH %s\n%s\n%s", where, q.sql, o.problem)
	}
	return o.problem == "" && q.bug == ""
}

// runCorpus runs the corpus as subtests of t and returns how many passed.
// Queries marked as known bugs run in child processes (isolate_test.go),
// started first so that they run while the rest runs here: a bug may
// crash the process, and must not take the other queries with it.
func runCorpus(ctx context.Context, t *testing.T, f *fixture, corpus []corpusQuery, withBugs bool) int {
	var bugs []corpusQuery
	for _, q := range corpus {
		if q.bug != "" && withBugs && os.Getenv("DIFFTEST_SKIP_KNOWN_BUGS") == "" {
			bugs = append(bugs, q)
		}
	}
	type isolated struct {
		outcomes map[string]outcome
		err      error
	}
	done := make(chan isolated, 1)
	go func() {
		if len(bugs) == 0 {
			done <- isolated{}
			return
		}
		o, err := runIsolated(bugs)
		done <- isolated{o, err}
	}()
	passed := 0
	for _, q := range corpus {
		if q.bug != "" {
			if withBugs && len(bugs) == 0 {
				t.Run(q.name, func(t *testing.T) { t.Skipf("known Lakestream bug: %s", q.bug) })
			}
			continue
		}
		t.Run(q.name, func(t *testing.T) {
			if report(t, q, runCorpusQuery(ctx, f, q)) {
				passed++
			}
		})
	}
	iso := <-done
	if iso.err != nil {
		t.Fatalf("known-bug queries: %v", iso.err)
	}
	for _, q := range bugs {
		t.Run(q.name, func(t *testing.T) {
			if report(t, q, iso.outcomes[q.name]) {
				passed++
			}
		})
	}
	return passed
}

func TestCorpus(t *testing.T) {
	f := getFixture(t)
	corpus := loadCorpus(t)
	if len(corpus) < 120 {
		t.Errorf("the corpus has %d queries, want at least 120", len(corpus))
	}
	start := time.Now()
	passed := runCorpus(context.Background(), t, f, corpus, true)
	t.Logf("corpus: %d of %d queries pass, %d are marked as known Lakestream bugs (%s)",
		passed, len(corpus), countBugs(corpus), time.Since(start).Round(time.Millisecond))
}
