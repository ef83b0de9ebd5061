package tables_test

import (
	"context"
	"math/rand/v2"
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

	// The log goes back to before the second write; the index stays ahead.
	kv := h.kvFS.CrashClone(pebblevfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
	h.close()
	h.logFS, h.kvFS = oldLog, kv
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
}
