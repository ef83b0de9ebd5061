package tables_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

func TestStoreGetUnknownTable(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	ctx := context.Background()
	if _, err := e.store.Get(ctx, "", "nope"); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Errorf("Get unknown: %v, want ErrTableNotFound", err)
	}
	if _, err := e.store.Table(ctx, "", "nope"); !errors.Is(err, scan.ErrTableNotFound) {
		t.Errorf("Table unknown: %v, want scan.ErrTableNotFound", err)
	}
	if _, err := e.store.ByID(ctx, 12345); err == nil {
		t.Error("ByID of an unknown id: no error")
	}
}

func TestStoreDatabases(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE DATABASE sales")
	e.mustExec("CREATE TABLE sales.orders " + eventsCols + " WITH ('bucket.num'='2')")
	tbl, err := e.store.Get(context.Background(), "sales", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Name() != "sales.orders" {
		t.Errorf("Name() = %q", tbl.Name())
	}
	e.write(tbl, events(t, e.mem, 0, 10))
	dir := tableDir(e, tbl.Def().ID)
	if err := e.exec("DROP DATABASE sales"); !errors.Is(err, catalog.ErrDatabaseNotEmpty) {
		t.Errorf("DROP DATABASE of a non-empty database: %v, want ErrDatabaseNotEmpty", err)
	}
	e.mustExec("DROP DATABASE sales CASCADE")
	if _, err := e.fs.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("table dir %s after DROP DATABASE CASCADE: stat err %v, want not exist", dir, err)
	}
}

func TestStoreDDLErrors(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	if err := e.exec("CREATE TABLE ev (a BIGINT)"); !errors.Is(err, catalog.ErrTableExists) {
		t.Errorf("create twice: %v, want ErrTableExists", err)
	}
	e.mustExec("CREATE TABLE IF NOT EXISTS ev (a BIGINT)")
	if err := e.exec("DROP TABLE nope"); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Errorf("drop unknown: %v, want ErrTableNotFound", err)
	}
	e.mustExec("DROP TABLE IF EXISTS nope")
	if err := e.exec("ALTER TABLE ev ADD COLUMN kind VARCHAR"); !errors.Is(err, catalog.ErrColumnExists) {
		t.Errorf("add existing column: %v, want ErrColumnExists", err)
	}
	if err := e.exec("CREATE TABLE bad (a FLUBBER)"); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("unknown type: %v, want ErrInvalid", err)
	}
	// The failed ALTER left the table as it was.
	if got := e.table("ev").Schema().NumFields(); got != 4 {
		t.Errorf("ev has %d columns after a failed ALTER, want 4", got)
	}
}

func tableDir(e *env, id int64) string { return filepath.Join(e.dir, strconv.FormatInt(id, 10)) }

func statFS(e *env) vfs.FS {
	if e.fs != nil {
		return e.fs
	}
	return vfs.Default
}

// DROP TABLE removes the table's directory; a table of the same name
// created afterwards starts empty.
func TestDropTableRemovesData(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fs vfs.FS
			if fsName == "mem" {
				fs = vfs.NewMem()
			}
			e := newEnv(t, fs)
			e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3')")
			tbl := e.table("ev")
			e.write(tbl, events(t, e.mem, 0, 100))
			id := tbl.Def().ID
			dir := tableDir(e, id)
			if _, err := statFS(e).Stat(dir); err != nil {
				t.Fatalf("table dir %s before DROP: %v", dir, err)
			}
			e.mustExec("DROP TABLE ev")
			if _, err := statFS(e).Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("table dir after DROP: stat err %v, want not exist", err)
			}
			if _, err := e.store.Get(context.Background(), "", "ev"); !errors.Is(err, catalog.ErrTableNotFound) {
				t.Errorf("Get after DROP: %v, want ErrTableNotFound", err)
			}
			if _, err := e.store.ByID(context.Background(), id); err == nil {
				t.Error("ByID of a dropped table: no error")
			}
			e.mustExec("CREATE TABLE ev " + eventsCols)
			tbl2 := e.table("ev")
			if tbl2.Def().ID == id {
				t.Errorf("re-created table reuses id %d", id)
			}
			if rows := flatten(readBuckets(t, tbl2, allCols(tbl2))); len(rows) != 0 {
				t.Errorf("re-created table holds %d rows", len(rows))
			}
		})
	}
}

// Rows written before ADD COLUMN read back with nulls in the new column,
// through every read path; rows written after carry their values.
func TestAddColumnReadsOldBatchesWithNulls(t *testing.T) {
	for _, codec := range []string{"none", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			e := newEnv(t, vfs.NewMem())
			e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2', 'log.compression'='" + codec + "')")
			tbl := e.table("ev")
			e.write(tbl, events(t, e.mem, 0, 50))
			old := expectRows(events(t, e.mem, 0, 50))

			e.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
			if tbl != e.table("ev") {
				t.Fatal("ALTER TABLE replaced the open table")
			}
			if n := tbl.Schema().NumFields(); n != 5 {
				t.Fatalf("schema after ADD COLUMN has %d fields: %v", n, tbl.Schema())
			}
			if f := tbl.Schema().Field(4); f.Name != "note" || !f.Nullable {
				t.Fatalf("new field %v", f)
			}
			var want []string
			for _, r := range old {
				want = append(want, r+"|(null)")
			}
			sameRows(t, "ReadBatches after ADD COLUMN", flatten(readBuckets(t, tbl, allCols(tbl))), want)
			_, rows := scanPlan(t, tbl, nil)
			sameRows(t, "Plan after ADD COLUMN", rows, want)
			// The new column before an old one: DecodeBatch first, where a
			// panic can be caught, then the plan, whose decoding runs on a
			// goroutine where a panic would kill the test binary.
			if rows, ok := decodeAll(t, tbl, []int{4, 0}); ok {
				sameRows(t, "DecodeBatch of note, id", rows, projectRows(want, 4, 0))
				_, rows = scanPlan(t, tbl, []int{4, 0})
				sameRows(t, "Plan of note, id", rows, projectRows(want, 4, 0))
			}
			_, rows = scanPlan(t, tbl, []int{0, 4})
			sameRows(t, "Plan of id, note", rows, projectRows(want, 0, 4))

			// A record without the new column still conforms; one with it
			// keeps its values.
			e.write(tbl, events(t, e.mem, 50, 5))
			withNote := events(t, e.mem, 60, 2)
			withNote = addStringColumn(t, e, withNote, "note", "hello", "world")
			e.write(tbl, withNote)
			for _, r := range expectRows(events(t, e.mem, 50, 5)) {
				want = append(want, r+"|(null)")
			}
			newRows := expectRows(events(t, e.mem, 60, 2))
			want = append(want, newRows[0]+"|hello", newRows[1]+"|world")
			sameRows(t, "after writes under the new schema", flatten(readBuckets(t, tbl, allCols(tbl))), want)

			// And it all survives a reopen.
			e.reopen()
			tbl = e.table("ev")
			sameRows(t, "after reopen", flatten(readBuckets(t, tbl, allCols(tbl))), want)
		})
	}
}

// Closing and reopening the store keeps tables, options and rows.
func TestReopenKeepsEverything(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id', 'log.compression'='lz4')")
	e.mustExec("CREATE TABLE other (a BIGINT)")
	e.mustExec("CREATE TABLE gone (a BIGINT)")
	tbl := e.table("ev")
	e.write(tbl, events(t, e.mem, 0, 400))
	e.write(tbl, events(t, e.mem, 400, 100))
	before := readBuckets(t, tbl, allCols(tbl))
	snap := tbl.LogRanges()
	goneDir := tableDir(e, e.table("gone").Def().ID)
	e.mustExec("DROP TABLE gone")

	e.reopen()
	tbl = e.table("ev")
	def := tbl.Def()
	if def.Options.BucketNum != 4 || def.Options.LogCompression != catalog.CompressionLZ4 || len(def.Options.BucketKey) != 1 {
		t.Errorf("options after reopen: %+v", def.Options)
	}
	if got := tbl.LogRanges(); len(got) != len(snap) {
		t.Fatalf("snapshot after reopen %v, before %v", got, snap)
	} else {
		for i := range got {
			if got[i] != snap[i] {
				t.Errorf("bucket %d: %+v after reopen, %+v before", i, got[i], snap[i])
			}
		}
	}
	after := readBuckets(t, tbl, allCols(tbl))
	for b := range before {
		sameRows(t, "bucket "+strconv.Itoa(b)+" after reopen", after[b], before[b])
	}
	if _, err := vfs.Default.Stat(goneDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dropped table's dir after reopen: %v", err)
	}
	// Writes continue after the reopen.
	e.write(tbl, events(t, e.mem, 500, 10))
	if n := len(flatten(readBuckets(t, tbl, allCols(tbl)))); n != 510 {
		t.Errorf("%d rows after a write following reopen, want 510", n)
	}
	e.table("other")
}

// decodeAll decodes every batch of tbl with DecodeBatch; it reports a
// decoder panic as a test error and returns false.
func decodeAll(t *testing.T, tbl *tables.Table, cols []int) ([]string, bool) {
	t.Helper()
	var rows []string
	for _, r := range tbl.LogRanges() {
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			rec, err := safeDecode(tbl, b, cols)
			if err != nil {
				return err
			}
			rows = append(rows, rowStrings(rec)...)
			rec.Release()
			return nil
		})
		if err != nil {
			t.Errorf("decode batches written before ADD COLUMN with columns %v: %v", cols, err)
			return nil, false
		}
	}
	return rows, true
}
