package tables_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	pebblevfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/vfs"
)

// The key index is derived from the log: an index ahead of the log (the
// log lost what the index had applied) and a lost index are rebuilt.
func TestPKIndexRebuiltFromLog(t *testing.T) {
	h := &pkHarness{t: t, dir: "/data/tables", cat: t.TempDir() + "/catalog.db", logFS: vfs.NewMem(), kvFS: pebblevfs.NewCrashableMem(),
		mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	h.open()
	t.Cleanup(func() {
		h.close()
		h.mem.AssertSize(t, 0)
	})
	ctx := context.Background()
	stmt, _ := catalog.Parse(`CREATE TABLE m (id BIGINT, a VARCHAR, n BIGINT, v BIGINT, PRIMARY KEY (id)) WITH ('bucket.num' = '2')`)
	if err := h.store.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	m := &pkModel{engine: "last_row", rows: map[int64]mRow{}, log: map[int64][]string{}}
	write := func(ws []mWrite) {
		t.Helper()
		tbl, err := h.store.Get(ctx, "", "m")
		if err != nil {
			t.Fatal(err)
		}
		rec := writesRecord(h.mem, ws)
		defer rec.Release()
		if _, err := tbl.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		m.apply("upsert", ws)
	}
	row := func(id, n int64) mWrite {
		return mWrite{id: id, row: mRow{n: &n}, present: [3]bool{true, true, true}}
	}
	write([]mWrite{row(1, 1), row(2, 2), row(3, 3)})
	before := &pkModel{engine: m.engine, rows: map[int64]mRow{}, log: map[int64][]string{}}
	for k, v := range m.rows {
		before.rows[k] = v
	}
	for k, v := range m.log {
		before.log[k] = append([]string(nil), v...)
	}
	oldLog := h.logFS.CrashClone(vfs.CrashOptions{})
	write([]mWrite{row(1, 10), row(4, 4)})
	checkPKModel(t, h, m, 6, "after the second write")

	// The log goes back to before the second write; the index, closed
	// cleanly, stays ahead.
	h.close()
	h.logFS = oldLog
	h.open()
	checkPKModel(t, h, before, 6, "index ahead of the log")

	// A lost index is rebuilt.
	h.close()
	if err := h.kvFS.RemoveAll("/data/tables/1/kv"); err != nil {
		t.Fatal(err)
	}
	h.open()
	checkPKModel(t, h, before, 6, "index lost")
	m = before
	write([]mWrite{row(2, 20), row(5, 5)})
	checkPKModel(t, h, m, 6, "written after the rebuild")

	// A damaged index is rebuilt too; the table is not quarantined.
	h.close()
	names, err := h.kvFS.List("/data/tables/1/kv")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST") {
			f, err := h.kvFS.Create("/data/tables/1/kv/"+n, pebblevfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("damaged")); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	h.open()
	checkPKModel(t, h, m, 6, "index damaged")
}

// Retention deletes the segments that hold no live record, never one that
// does; an index behind the retained log's start (here: lost) is rebuilt
// from what is retained.
func TestPKRetentionKeepsLiveRows(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec(`CREATE TABLE kv (id BIGINT, pad VARCHAR, PRIMARY KEY (id))
		WITH ('log.segment.bytes' = '1MiB', 'log.retention' = '1ms', 'datalake.enabled' = 'false', 'log.compression' = 'none')`)
	tbl := e.table("kv")
	const n = 4000
	pad := strings.Repeat("x", 300)
	write := func(round int) {
		ids, pads := make([]any, n), make([]any, n)
		for i := range ids {
			ids[i], pads[i] = i, fmt.Sprintf("%d-%s", round, pad)
		}
		e.write(tbl, record(t, e.mem, i64("id", false, ids...), str("pad", pads...)))
	}
	for round := range 4 {
		write(round)
	}
	// Keys 0..9 get a fifth row; the others keep that of round 3: every
	// live row is in the last segments.
	ids := []any{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	e.write(tbl, record(t, e.mem, i64("id", false, ids...), str("pad", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")))
	want := pkRows(t, e, "kv")
	if len(want) != n {
		t.Fatalf("%d rows, want %d", len(want), n)
	}
	deleted, err := e.store.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if deleted == 0 || tbl.Log().Bucket(0).Stats().Start == 0 {
		t.Fatalf("retention deleted %d segments (start %d): the test needs old segments without live rows", deleted, tbl.Log().Bucket(0).Stats().Start)
	}
	sameRows(t, "after retention", pkRows(t, e, "kv"), want)
	// Over an in-memory log the store's key indexes are in memory too: a
	// reopen loses them, and the index starts below the retained log.
	e.reopen()
	sameRows(t, "index rebuilt from the retained log", pkRows(t, e, "kv"), want)
}
