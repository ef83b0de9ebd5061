package tiering

import (
	"context"
	"encoding/json"
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
	const script = `
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
cat = SqlCatalog("lakestream", uri="sqlite:///" + sys.argv[1] + "/iceberg.db")
a = cat.load_table("default.kv").scan().to_arrow()
print(json.dumps([[i, x, k] for i, x, k in zip(a.column("id").to_pylist(), a.column("amount").to_pylist(), a.column("kind").to_pylist())]))
`
	out, err := exec.Command(py, "-c", script, e.dir).Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v: %s", err, out)
	}
	var rows [][3]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("pyiceberg's output %q: %v", out, err)
	}
	got := pkModel{}
	for _, r := range rows {
		id := int64(r[0].(float64))
		if _, dup := got[id]; dup {
			t.Fatalf("pyiceberg reads key %d twice", id)
		}
		kind, _ := r[2].(string)
		got[id] = pkRow{r[1].(float64), kind}
	}
	if !maps.Equal(got, m) {
		t.Fatalf("pyiceberg reads %s, want %s", describe(got), describe(m))
	}
}
