package tiering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// lakeHistory reads bucket's history from the lake from offset from, as
// the hand-off does, into changelog rows.
func (e *lakeEnv) lakeHistory(name string, bucket int, from int64) ([]changeRow, int64, error) {
	e.t.Helper()
	tbl := e.table(name)
	h := lakeReader{s: e.svc, lt: e.svc.lookup(tbl.Def().ID)}
	schema := tbl.ChangelogSchema()
	col := func(name string) int { return schema.FieldIndices(name)[0] }
	cols := []int{col("id"), col("amount"), col("_change_type"), col("_offset"), col("_commit_timestamp")}
	out := make(chan arrow.RecordBatch, 1<<10)
	end, err := h.ReadHistory(context.Background(), bucket, from, cols, out)
	close(out)
	var rows []changeRow
	for rec := range out {
		for i := 0; i < int(rec.NumRows()); i++ {
			rows = append(rows, changeRow{
				id:     rec.Column(0).(*array.Int64).Value(i),
				amount: rec.Column(1).(*array.Float64).Value(i),
				change: rec.Column(2).(*array.String).Value(i),
				offset: rec.Column(3).(*array.Int64).Value(i),
				commit: int64(rec.Column(4).(*array.Timestamp).Value(i)),
			})
		}
		rec.Release()
	}
	return rows, end, err
}

// The lake's history of a primary-key table is its exact changelog
// (+I/-U/+U/-D, as the log had it) until compaction collapses files: a
// read from below the collapsed range is refused naming the offset the
// exact history starts at, and from there on it is still the log's.
func TestPKHistoryAcrossCompaction(t *testing.T) {
	e := newLakeEnv(t, Config{Maintenance: Maintenance{CompactMinFiles: 3, CompactSmallBytes: 1 << 20}})
	e.exec(fmt.Sprintf(createKV, 1, ", 'log.retention'='1ms'"))
	m := pkModel{}
	for r := 0; r < 6; r++ {
		e.upsert("kv", m, ids(0, 50), float64(r), "a")
		e.remove("kv", m, ids(int64(r), int64(r)+3))
		e.round("kv")
	}
	tbl := e.table("kv")
	end := tbl.Tiered()[0]
	logRows := follow(t, tbl, 0, 0, end)
	got, next, err := e.lakeHistory("kv", 0, 0)
	if err != nil || next != end {
		t.Fatalf("history before compaction: to %d, %v; want to %d", next, err, end)
	}
	if !slices.Equal(got, logRows) {
		t.Fatalf("the lake's history is not the log's changelog: %d rows, the log %d", len(got), len(logRows))
	}
	kinds := map[string]bool{}
	for _, r := range got {
		kinds[r.change] = true
	}
	if len(kinds) != 4 {
		t.Fatalf("change types %v in the history, want +I, -U, +U, -D", kinds)
	}
	// The files of the first rounds are mostly deleted rows: compacted.
	e.upsert("kv", m, ids(0, 50), 9, "b")
	e.round("kv")
	res, err := e.svc.Maintain(context.Background(), tbl.Def().ID, false)
	if err != nil || res.FilesCompacted == 0 {
		t.Fatalf("maintenance compacted %d files: %v", res.FilesCompacted, err)
	}
	e.checkLake("kv", m, "after compaction")
	end = tbl.Tiered()[0]
	_, _, err = e.lakeHistory("kv", 0, 0)
	if !errors.Is(err, errNoHistory) {
		t.Fatalf("history from 0 after compaction: %v, want errNoHistory", err)
	}
	exact := exactHistoryStart(e.svc.lookup(tbl.Def().ID).state.Load().pk.runs[0], end)
	if exact == 0 || exact >= end {
		t.Fatalf("the exact history starts at %d of [0, %d)", exact, end)
	}
	if want := fmt.Sprintf("the exact history starts at offset %d", exact); !strings.Contains(err.Error(), want) {
		t.Fatalf("the error does not name the exact start: %v", err)
	}
	got, next, err = e.lakeHistory("kv", 0, exact)
	if err != nil || next != end {
		t.Fatalf("history from the exact start %d: to %d, %v; want to %d", exact, next, err, end)
	}
	if want := follow(t, tbl, 0, exact, end); !slices.Equal(got, want) {
		t.Fatalf("the history from %d is not the log's changelog: %d rows, the log %d", exact, len(got), len(want))
	}
	if _, err := (lakeReader{s: e.svc, lt: e.svc.lookup(tbl.Def().ID)}).HistoryOffsetForTime(context.Background(), 0, 0); !errors.Is(err, errNoHistory) {
		t.Fatalf("offset for a time before the exact history: %v, want errNoHistory", err)
	}
}

// Merging a primary-key table's young small files keeps every row and
// its row map (the deleted ones get position deletes in the new file): the
// lake's history is still exactly the log's changelog, and the table its
// state.
func TestPKFileMergeKeepsHistoryExact(t *testing.T) {
	e := newLakeEnv(t, Config{Maintenance: Maintenance{CompactMinFiles: 3, CompactSmallBytes: 1 << 20}})
	e.exec(fmt.Sprintf(createKV, 2, ""))
	m := pkModel{}
	for r := 0; r < 6; r++ {
		e.upsert("kv", m, ids(0, 40), float64(r), "a")
		e.remove("kv", m, ids(int64(r), int64(r)+3))
		e.round("kv")
	}
	tbl := e.table("kv")
	lt := e.svc.lookup(tbl.Def().ID)
	before := len(lt.state.Load().pk.files)
	res, err := e.svc.Maintain(context.Background(), tbl.Def().ID, false)
	if err != nil || res.FilesCompacted == 0 {
		t.Fatalf("maintenance merged %d files: %v", res.FilesCompacted, err)
	}
	if after := len(lt.state.Load().pk.files); after >= before {
		t.Fatalf("%d data files after merging, %d before", after, before)
	}
	e.checkLake("kv", m, "after merging files")
	e.checkPKLake("kv", "after merging files")
	for b, end := range tbl.Tiered() {
		got, next, err := e.lakeHistory("kv", b, 0)
		if err != nil || next != end {
			t.Fatalf("bucket %d: history after merging: to %d, %v; want to %d", b, next, err, end)
		}
		if want := follow(t, tbl, b, 0, end); !slices.Equal(got, want) {
			t.Fatalf("bucket %d: the history after merging is not the log's changelog: %d rows, the log %d", b, len(got), len(want))
		}
	}
	e.restart(Config{})
	e.upsert("kv", m, ids(30, 50), 7, "b")
	e.round("kv")
	e.checkLake("kv", m, "after a restart and a round")
}
