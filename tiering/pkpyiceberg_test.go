package tiering

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"testing"
)

// pyiceberg (scan().to_arrow(), which applies position deletes by its own
// matching: partition, sequence number, file_path bounds) reads a tiered
// primary-key table as exactly the tiered state. The interop suite
// (tests/interop) tests more engines; this is the Go side's quick check of
// the delete files' metadata.
func TestPKPyicebergReadsTheState(t *testing.T) {
	py := filepath.Join(repoRoot(t), ".venv", "bin", "python")
	requireTool(t, py, "run `make venv` to install pyiceberg into .venv")
	// No file is small at first: maintenance merges delete files only.
	e := newLakeEnv(t, Config{Maintenance: Maintenance{CompactMinFiles: 2, CompactSmallBytes: 1}})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
		WITH ('bucket.num'='3', 'datalake.freshness'='1h')`)
	m := pkModel{}
	e.upsert("kv", m, ids(0, 100), 1, "a")
	e.round("kv")
	e.upsert("kv", m, ids(50, 150), 2, "b")
	e.remove("kv", m, ids(0, 10))
	e.partial("kv", m, ids(20, 30), 3)
	e.round("kv")
	e.remove("kv", m, ids(140, 150))
	e.round("kv")
	// Merged delete files (their data sequence number the largest of those
	// they replace) apply as the files they replace did.
	res, err := e.svc.Maintain(context.Background(), e.table("kv").Def().ID, false)
	if err != nil || res.DeleteFilesMerged == 0 {
		t.Fatalf("maintenance merged %d delete files: %v", res.DeleteFilesMerged, err)
	}
	e.checkLake("kv", m, "after merging delete files")
	e.upsert("kv", m, ids(0, 20), 4, "c")
	e.round("kv")
	// Then small files are merged (their deleted rows deleted anew).
	e.restart(Config{Maintenance: Maintenance{CompactMinFiles: 2, CompactSmallBytes: 1 << 20}})
	res, err = e.svc.Maintain(context.Background(), e.table("kv").Def().ID, false)
	if err != nil || res.FilesCompacted == 0 {
		t.Fatalf("maintenance merged %d data files: %v", res.FilesCompacted, err)
	}
	e.checkLake("kv", m, "after merging data files")
	if got, deleted := pyicebergRead(t, py, e.dir, "kv"); !maps.Equal(got, m) {
		t.Fatalf("pyiceberg reads %s, want %s", describe(got), describe(m))
	} else if deleted == 0 {
		t.Fatal("pyiceberg planned no data file with deletes: the test did not test them")
	}
}

// Once the files are older than log.retention, a maintenance pass applies
// every position delete (docs/lake.md, "Maintenance"): pyiceberg then
// plans no data file with a delete file (each would cost it about 1 µs a
// row, docs/benchmarks.md) and still reads the state.
func TestPKPyicebergReadsCompactedLakeWithoutDeletes(t *testing.T) {
	py := filepath.Join(repoRoot(t), ".venv", "bin", "python")
	requireTool(t, py, "run `make venv` to install pyiceberg into .venv")
	e := newLakeEnv(t, Config{Maintenance: Maintenance{CompactMinFiles: 8, CompactSmallBytes: 1}})
	e.exec(fmt.Sprintf(createTierKV, 3, ", 'log.retention'='1ms'"))
	m := pkModel{}
	e.upsert("kv", m, ids(0, 300), 1, "a")
	e.round("kv")
	// A few keys of every file updated or deleted: each keeps most rows.
	e.upsert("kv", m, []int64{3, 100, 200, 299}, 2, "b")
	e.remove("kv", m, []int64{7, 150})
	e.round("kv")
	if _, deleted := pyicebergRead(t, py, e.dir, "kv"); deleted == 0 {
		t.Fatal("no data file with deletes before maintenance")
	}
	res, err := e.svc.Maintain(context.Background(), e.table("kv").Def().ID, false)
	if err != nil || res.FilesCompacted == 0 {
		t.Fatalf("maintenance compacted %d files: %v", res.FilesCompacted, err)
	}
	got, deleted := pyicebergRead(t, py, e.dir, "kv")
	if deleted != 0 {
		t.Fatalf("pyiceberg plans %d data files with deletes after maintenance, want 0", deleted)
	}
	if !maps.Equal(got, m) {
		t.Fatalf("pyiceberg reads %s, want %s", describe(got), describe(m))
	}
	e.checkLake("kv", m, "after maintenance")
	e.checkPKLake("kv", "after maintenance")
}

// pyicebergRead reads table default.name of the SQL catalog in dir with
// pyiceberg's scan().to_arrow(), and counts the data files its plan pairs
// with a delete file that names them.
func pyicebergRead(t *testing.T, py, dir, name string) (pkModel, int) {
	t.Helper()
	const script = `
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import _read_all_delete_files
cat = SqlCatalog("lakestream", uri="sqlite:///" + sys.argv[1] + "/iceberg.db")
tbl = cat.load_table("default." + sys.argv[2])
tasks = list(tbl.scan().plan_files())
named = _read_all_delete_files(tbl.io, tasks)
a = tbl.scan().to_arrow()
print(json.dumps({"deleted": sum(1 for t in tasks if t.file.file_path in named),
	"rows": [[i, x, k] for i, x, k in zip(a.column("id").to_pylist(), a.column("amount").to_pylist(), a.column("kind").to_pylist())]}))
`
	out, err := exec.Command(py, "-c", script, dir, name).Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v: %s", err, out)
	}
	var res struct {
		Deleted int     `json:"deleted"`
		Rows    [][]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pyiceberg's output %q: %v", out, err)
	}
	got := pkModel{}
	for _, r := range res.Rows {
		id := int64(r[0].(float64))
		if _, dup := got[id]; dup {
			t.Fatalf("pyiceberg reads key %d twice", id)
		}
		kind, _ := r[2].(string)
		got[id] = tierRow{r[1].(float64), kind}
	}
	return got, res.Deleted
}
