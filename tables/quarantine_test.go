package tables_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// twoTables creates tables good and bad with rows in each and closes the
// store, so that a test can damage bad's data before reopening.
func twoTables(t *testing.T, e *env) (goodRows []string, badID int64) {
	t.Helper()
	e.mustExec("CREATE TABLE good " + eventsCols + " WITH ('bucket.num'='2')")
	e.mustExec("CREATE TABLE bad " + eventsCols + " WITH ('bucket.num'='2')")
	good := e.table("good")
	e.write(good, events(t, e.mem, 0, 50))
	e.write(e.table("bad"), events(t, e.mem, 0, 50))
	goodRows = flatten(readBuckets(t, good, allCols(good)))
	badID = e.table("bad").Def().ID
	e.close()
	return goodRows, badID
}

// openQuarantined reopens e, expecting table bad to be quarantined with a
// reason containing want and table good to serve its rows.
func openQuarantined(t *testing.T, e *env, goodRows []string, want string) {
	t.Helper()
	e.open()
	q := e.store.Quarantined()
	if len(q) != 1 || q[0].Table != "default.bad" || q[0].Part != tables.PartLog || !strings.Contains(q[0].Err.Error(), want) {
		t.Fatalf("Quarantined() = %+v, want default.bad's log with %q", q, want)
	}
	ctx := context.Background()
	_, err := e.store.Get(ctx, "", "bad")
	if !errors.Is(err, tables.ErrQuarantined) || !strings.Contains(err.Error(), `"default.bad"`) || !strings.Contains(err.Error(), want) {
		t.Errorf("Get(bad): %v, want ErrQuarantined naming the table and %q", err, want)
	}
	if _, err := e.store.ByID(ctx, q[0].ID); !errors.Is(err, tables.ErrQuarantined) {
		t.Errorf("ByID(bad): %v, want ErrQuarantined", err)
	}
	if _, err := e.store.Table(ctx, "", "bad"); !errors.Is(err, tables.ErrQuarantined) {
		t.Errorf("Table(bad) for the query engine: %v, want ErrQuarantined", err)
	}
	if _, _, err := e.store.Resolve(ctx, "", "bad$changelog"); !errors.Is(err, tables.ErrQuarantined) {
		t.Errorf(`Resolve("bad$changelog"): %v, want ErrQuarantined`, err)
	}
	if err := e.exec("ALTER TABLE bad ADD COLUMN x INT"); !errors.Is(err, tables.ErrQuarantined) {
		t.Errorf("ALTER TABLE bad: %v, want ErrQuarantined", err)
	}
	if def, _ := e.cat.Table(ctx, "", "bad"); def.SchemaID != 0 {
		t.Errorf("a refused ALTER TABLE changed the catalog: schema %d", def.SchemaID)
	}
	for _, tbl := range e.store.Tables() {
		if tbl.Name() == "default.bad" {
			t.Error("Tables() lists the quarantined table")
		}
	}
	good := e.table("good")
	sameRows(t, "good beside a quarantined table", flatten(readBuckets(t, good, allCols(good))), goodRows)
	e.write(good, events(t, e.mem, 50, 1))
}

// A table whose log cannot be opened is quarantined and the others open;
// today's alternative, failing the whole start, makes one table take the
// node down. DROP TABLE removes it.
func TestTableWithDamagedLogIsQuarantined(t *testing.T) {
	t.Run("segment replaced by a directory", func(t *testing.T) {
		fs := vfs.NewMem()
		e := newEnv(t, fs)
		goodRows, badID := twoTables(t, e)
		bucket := filepath.Join(tableDir(e, badID), "0")
		names, err := fs.List(bucket)
		if err != nil {
			t.Fatal(err)
		}
		var seg string
		for _, n := range names {
			if strings.HasSuffix(n, ".log") {
				seg = filepath.Join(bucket, n)
			}
		}
		if seg == "" {
			t.Fatalf("no segment in %s: %v", bucket, names)
		}
		if err := fs.Remove(seg); err != nil {
			t.Fatal(err)
		}
		if err := fs.MkdirAll(seg, 0o755); err != nil {
			t.Fatal(err)
		}
		openQuarantined(t, e, goodRows, filepath.Base(seg))

		e.mustExec("DROP TABLE bad")
		if _, err := fs.Stat(tableDir(e, badID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dropped table's directory: %v, want removed", err)
		}
		e.reopen()
		if q := e.store.Quarantined(); len(q) != 0 {
			t.Errorf("after DROP TABLE and a reopen: quarantined %+v", q)
		}
	})
	t.Run("unreadable commit file", func(t *testing.T) {
		fs := vfs.NewMem()
		e := newEnv(t, fs)
		goodRows, badID := twoTables(t, e)
		commits := filepath.Join(tableDir(e, badID), "commits")
		fs.InjectError(func(op vfs.Op, name string) error {
			if name == commits && op == vfs.OpOpen {
				return fmt.Errorf("input/output error")
			}
			return nil
		})
		defer fs.InjectError(nil)
		openQuarantined(t, e, goodRows, "input/output error")
	})
	t.Run("os: commit file replaced by a directory", func(t *testing.T) {
		e := newEnv(t, nil)
		goodRows, badID := twoTables(t, e)
		commits := filepath.Join(tableDir(e, badID), "commits")
		if err := os.Remove(commits); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(commits, 0o755); err != nil {
			t.Fatal(err)
		}
		openQuarantined(t, e, goodRows, "commits")
	})
}

// A table in the catalog whose log directory is gone has lost its rows: it
// is quarantined, not opened as an empty table.
func TestMissingLogDirectoryIsQuarantined(t *testing.T) {
	fs := vfs.NewMem()
	e := newEnv(t, fs)
	goodRows, badID := twoTables(t, e)
	if err := fs.RemoveAll(tableDir(e, badID)); err != nil {
		t.Fatal(err)
	}
	openQuarantined(t, e, goodRows, "is missing")
	if _, err := fs.Stat(tableDir(e, badID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening recreated the missing directory: %v", err)
	}
}

// A table whose stored definition does not load is quarantined too.
func TestBrokenDefinitionIsQuarantined(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	goodRows, _ := twoTables(t, e)
	breakDefinition(t, e.catPath, "bad")
	e.open()
	q := e.store.Quarantined()
	if len(q) != 1 || q[0].Part != tables.PartDefinition || !strings.Contains(q[0].Err.Error(), "32 levels") {
		t.Fatalf("Quarantined() = %+v", q)
	}
	if _, err := e.store.Get(context.Background(), "", "bad"); !errors.Is(err, tables.ErrQuarantined) || !errors.Is(err, catalog.ErrDefinitionBroken) {
		t.Errorf("Get(bad): %v", err)
	}
	if len(e.store.Orphans()) != 0 {
		t.Errorf("the broken table's directory is reported as an orphan: %v", e.store.Orphans())
	}
	good := e.table("good")
	sameRows(t, "good", flatten(readBuckets(t, good, allCols(good))), goodRows)
	e.mustExec("DROP TABLE bad")
}

// Directories without a catalog entry are kept and reported, never
// deleted: a lost catalog.db must not delete every table's data. A new
// table never takes over such a directory.
func TestLostCatalogKeepsTableData(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
	tbl := e.table("ev")
	e.write(tbl, events(t, e.mem, 0, 20))
	id := tbl.Def().ID
	dir := tableDir(e, id)
	e.close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(e.catPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(e.dir, "not-a-table"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.open()
	if o := e.store.Orphans(); len(o) != 1 || o[0].ID != id || o[0].Dir != dir {
		t.Errorf("Orphans() = %+v, want table %d's directory", o, id)
	}
	for _, d := range []string{dir, filepath.Join(e.dir, "not-a-table")} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s after opening with an empty catalog: %v, want kept", d, err)
		}
	}
	// The new catalog numbers tables from 1 again.
	if err := e.exec("CREATE TABLE fresh (a BIGINT)"); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("CREATE TABLE over an orphan directory: %v, want refused", err)
	}
	if _, err := e.cat.Table(context.Background(), "", "fresh"); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Errorf("the refused CREATE TABLE stayed in the catalog: %v", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Errorf("the orphan's data after a refused CREATE: %v, %v", entries, err)
	}
	e.reopen()
	if o := e.store.Orphans(); len(o) != 1 {
		t.Errorf("Orphans() after a reopen = %+v", o)
	}
}

// DROP TABLE renames the directory before the catalog change: a crash
// before the change leaves the table whole (start-up renames it back),
// a crash after it leaves provable garbage (start-up deletes it).
func TestDropTableIsCrashSafe(t *testing.T) {
	t.Run("crash before the catalog change", func(t *testing.T) {
		fs := vfs.NewMem()
		e := newEnv(t, fs)
		e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
		tbl := e.table("ev")
		e.write(tbl, events(t, e.mem, 0, 30))
		want := flatten(readBuckets(t, tbl, allCols(tbl)))
		dir := tableDir(e, tbl.Def().ID)
		e.close()
		if err := fs.Rename(dir, dir+".dropped"); err != nil { // the first step of DROP
			t.Fatal(err)
		}
		e.open()
		tbl = e.table("ev")
		sameRows(t, "after a DROP that did not commit", flatten(readBuckets(t, tbl, allCols(tbl))), want)
		if _, err := fs.Stat(dir + ".dropped"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the .dropped directory is still there: %v", err)
		}
	})
	t.Run("crash after the catalog change", func(t *testing.T) {
		fs := vfs.NewMem()
		e := newEnv(t, fs)
		e.mustExec("CREATE TABLE ev " + eventsCols)
		tbl := e.table("ev")
		e.write(tbl, events(t, e.mem, 0, 30))
		dir := tableDir(e, tbl.Def().ID)
		// The deletion after the catalog change fails, as a crash there
		// would leave it.
		fs.InjectError(func(op vfs.Op, name string) error {
			if op == vfs.OpRemove && strings.HasSuffix(name, ".dropped") {
				return errors.New("injected")
			}
			return nil
		})
		e.mustExec("DROP TABLE ev")
		fs.InjectError(nil)
		if _, err := fs.Stat(dir + ".dropped"); err != nil {
			t.Fatalf("the .dropped directory: %v", err)
		}
		e.reopen()
		if _, err := fs.Stat(dir + ".dropped"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("start-up kept the .dropped directory of a dropped table: %v", err)
		}
		if o := e.store.Orphans(); len(o) != 0 {
			t.Errorf("Orphans() = %+v", o)
		}
	})
	t.Run("catalog change fails", func(t *testing.T) {
		e := newEnv(t, vfs.NewMem())
		e.mustExec("CREATE TABLE ev " + eventsCols)
		tbl := e.table("ev")
		e.write(tbl, events(t, e.mem, 0, 30))
		want := flatten(readBuckets(t, tbl, allCols(tbl)))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		stmt, _ := catalog.Parse("DROP TABLE ev")
		if err := e.store.Exec(ctx, stmt); !errors.Is(err, context.Canceled) {
			t.Fatalf("DROP with a canceled context: %v", err)
		}
		tbl = e.table("ev")
		sameRows(t, "after a DROP whose catalog change failed", flatten(readBuckets(t, tbl, allCols(tbl))), want)
		e.write(tbl, events(t, e.mem, 30, 1))
		e.reopen()
		if n := len(flatten(readBuckets(t, e.table("ev"), allCols(tbl)))); n != 31 {
			t.Errorf("%d rows after a reopen, want 31", n)
		}
	})
}

// breakDefinition stores a definition of table name that does not load
// (a type nested 10,000 deep, as releases without limits accepted), in
// the closed catalog at path.
func breakDefinition(t *testing.T, path, name string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deep := `[{"name":"c","type":"` + strings.Repeat("STRUCT(a ", 10000) + "INT" + strings.Repeat(")", 10000) + `"}]`
	if _, err := db.Exec(`UPDATE table_schemas SET columns = ? WHERE table_id = (SELECT id FROM tables WHERE name = ?)`, deep, name); err != nil {
		t.Fatal(err)
	}
}
