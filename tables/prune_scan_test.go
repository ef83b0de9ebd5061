package tables_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// scanFiltered reads a plan of st with the given filters and returns, as
// strings, the rows that satisfy all of them, and how many rows the scan
// returned before that (what pruning left).
func scanFiltered(t *testing.T, st scan.Table, fs []scan.Filter) (matching []string, scanned int) {
	t.Helper()
	ctx := ctxTimeout(t)
	p, err := st.Plan(ctx, scan.Request{Filters: fs})
	if err != nil {
		t.Fatalf("plan with %v: %v", fs, err)
	}
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			scanned += int(rec.NumRows())
			rows := rowStrings(rec)
		row:
			for i := range int(rec.NumRows()) {
				for _, f := range fs {
					if !tables.Satisfies(rec.Column(f.Column), i, f) {
						continue row
					}
				}
				matching = append(matching, rows[i])
			}
			rec.Release()
		}
		if err := rs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return matching, scanned
}

// Pruning never changes what a filtered scan finds: random conjunctions of
// filters over rows written in many batches, some before an ADD COLUMN,
// give the same matching rows with the filters pushed down as without,
// and pushed down they skip batches.
func TestPruningKeepsScanResults(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2', 'bucket.key'='id')")
	tbl := e.table("ev")
	const per = 40
	for w := range 20 {
		e.write(tbl, events(t, e.mem, w*per, per))
	}
	e.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	for w := 20; w < 30; w++ {
		notes := make([]any, per)
		for i := range notes {
			if i%3 != 0 {
				notes[i] = fmt.Sprintf("note-%04d", w*per+i)
			}
		}
		e.write(tbl, addStringColumn(t, e, events(t, e.mem, w*per, per), "note", notes...))
	}
	const total = 30 * per
	_, all := scanFiltered(t, tbl, nil)
	if all != total {
		t.Fatalf("scan without filters: %d rows, want %d", all, total)
	}

	ref := readAll(t, tbl)
	defer func() {
		for _, r := range ref {
			r.Release()
		}
	}()
	rng := rand.New(rand.NewPCG(5, 6))
	ops := []string{"=", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL"}
	value := func(col int) any {
		id := rng.IntN(total+20) - 10
		switch col {
		case 0:
			return int64(id)
		case 1:
			return float64(id) / 4
		case 2:
			return []string{"buy", "click", "view", "a", "zzz"}[rng.IntN(5)]
		case 3:
			return arrow.Timestamp(1_700_000_000_000_000 + id*1000)
		}
		return fmt.Sprintf("note-%04d", id)
	}
	prunedSome := 0
	const rounds = 80
	for round := range rounds {
		var fs []scan.Filter
		for range 1 + rng.IntN(3) {
			f := scan.Filter{Column: rng.IntN(5), Op: ops[rng.IntN(len(ops))]}
			if f.Op[0] != 'I' {
				f.Value = value(f.Column)
			}
			fs = append(fs, f)
		}
		got, scanned := scanFiltered(t, tbl, fs)
		want := matching(ref, fs)
		if !slices.Equal(sorted(got), sorted(want)) {
			t.Fatalf("round %d, filters %v: %d matching rows with pruning, %d without\n got %s\nwant %s",
				round, fs, len(got), len(want), clip(sorted(got)), clip(sorted(want)))
		}
		if scanned < total {
			prunedSome++
		}
	}
	if prunedSome < rounds/3 {
		t.Errorf("only %d of %d filtered scans skipped a batch", prunedSome, rounds)
	}
}

// filterRows scans st without pushdown and keeps the rows satisfying fs:
// the reference.
func filterRows(t *testing.T, st scan.Table, fs []scan.Filter) []string {
	t.Helper()
	recs := readAll(t, st)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return matching(recs, fs)
}

// matching renders the rows of recs that satisfy every filter.
func matching(recs []arrow.RecordBatch, fs []scan.Filter) []string {
	var out []string
	for _, rec := range recs {
		rows := rowStrings(rec)
	row:
		for i := range int(rec.NumRows()) {
			for _, f := range fs {
				if !tables.Satisfies(rec.Column(f.Column), i, f) {
					continue row
				}
			}
			out = append(out, rows[i])
		}
	}
	return out
}

// readAll scans st without filters; the caller releases the records.
func readAll(t *testing.T, st scan.Table) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	ctx := ctxTimeout(t)
	p, err := st.Plan(ctx, scan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range p.Parts() {
		rs, err := part.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
		rs.Close()
	}
	return out
}

// Batches written before ADD COLUMN hold only nulls in the new column:
// a filter on its values skips them, IS NULL keeps them.
func TestPruningOlderSchema(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	e.write(tbl, events(t, e.mem, 0, 10))
	e.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	e.write(tbl, addStringColumn(t, e, events(t, e.mem, 10, 2), "note", "x", nil))
	for _, tc := range []struct {
		f              scan.Filter
		match, scanned int
	}{
		{scan.Filter{Column: 4, Op: "IS NOT NULL"}, 1, 2},
		{scan.Filter{Column: 4, Op: "=", Value: "x"}, 1, 2},
		{scan.Filter{Column: 4, Op: ">", Value: ""}, 1, 2},
		{scan.Filter{Column: 4, Op: "IS NULL"}, 11, 12},
		{scan.Filter{Column: 0, Op: ">=", Value: int64(10)}, 2, 2},
		{scan.Filter{Column: 0, Op: "<", Value: int64(0)}, 0, 0},
	} {
		got, scanned := scanFiltered(t, tbl, []scan.Filter{tc.f})
		if len(got) != tc.match || scanned != tc.scanned {
			t.Errorf("%+v: %d matching rows of %d scanned, want %d of %d", tc.f, len(got), scanned, tc.match, tc.scanned)
		}
	}
}

// The changelog view prunes on the header columns _bucket, _offset and
// _commit_timestamp.
func TestPruningChangelogColumns(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2', 'bucket.key'='id')")
	tbl := e.table("ev")
	for w := range 5 {
		e.write(tbl, events(t, e.mem, w*20, 20))
	}
	view, err := e.store.Table(context.Background(), "", "ev"+tables.ChangelogSuffix)
	if err != nil {
		t.Fatal(err)
	}
	n := len(tbl.Def().Columns)
	_, all := scanFiltered(t, view, nil)
	for _, tc := range []struct {
		name string
		f    scan.Filter
	}{
		{"_offset >= 40", scan.Filter{Column: n + 2, Op: ">=", Value: int64(40)}},
		{"_bucket = 1", scan.Filter{Column: n + 1, Op: "=", Value: int32(1)}},
		{"_commit_timestamp < 0", scan.Filter{Column: n + 3, Op: "<", Value: arrow.Timestamp(0)}},
	} {
		got, scanned := scanFiltered(t, view, []scan.Filter{tc.f})
		want := filterRows(t, view, []scan.Filter{tc.f})
		if !slices.Equal(sorted(got), sorted(want)) {
			t.Errorf("%s: %d rows with pruning, %d without", tc.name, len(got), len(want))
		}
		if scanned >= all {
			t.Errorf("%s: scanned %d rows of %d: nothing pruned", tc.name, scanned, all)
		}
	}
}
