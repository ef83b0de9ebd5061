package tiering

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// lakeModel is what iceberg-go's scanner (position deletes applied) reads
// of name's lake table in d.
func lakeModel(t *testing.T, d *dataDir, name string) pkModel {
	t.Helper()
	at, err := d.lake(name).Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rd := array.NewTableReader(at, 0)
	defer rd.Release()
	got := pkModel{}
	for rd.Next() {
		rec := rd.RecordBatch()
		id, amount, kind := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Float64), rec.Column(2).(*array.String)
		for i := range int(rec.NumRows()) {
			if _, dup := got[id.Value(i)]; dup {
				t.Fatalf("key %d read twice", id.Value(i))
			}
			got[id.Value(i)] = tierRow{amount.Value(i), kind.Value(i)}
		}
	}
	return got
}

// A data directory with a tiered primary-key table (changelog data files,
// position deletes over rounds) moved with the node stopped starts at its
// new place with the table relocated: iceberg-go's scanner reads exactly
// the state there, the orphan pass leaves only referenced files, and
// rounds go on.
func TestRelocatePKTable(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	d := openDataDir(t, a, Config{}, nil)
	d.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
		WITH ('bucket.num'='3', 'datalake.freshness'='1h')`)
	m := pkModel{}
	d.upsert("kv", m, ids(0, 100), 1, "a")
	d.round("kv")
	d.upsert("kv", m, ids(50, 150), 2, "b")
	d.remove("kv", m, ids(0, 10))
	d.round("kv")
	d.partial("kv", m, ids(20, 30), 3)
	d.round("kv")
	if got := lakeModel(t, d, "kv"); !maps.Equal(got, m) {
		t.Fatalf("before the move: %s, want %s", describe(got), describe(m))
	}
	d.stop()
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	d = openDataDir(t, b, Config{Maintenance: Maintenance{OrphanAge: 1}}, nil)
	if len(d.reloc.Moved) != 1 || d.reloc.Moved[0].Deletes == 0 || len(d.store.Quarantined()) != 0 {
		t.Fatalf("relocation %+v, quarantined %+v", d.reloc.Moved, d.store.Quarantined())
	}
	if got := lakeModel(t, d, "kv"); !maps.Equal(got, m) {
		t.Fatalf("after the move: %s, want %s", describe(got), describe(m))
	}
	// The orphan pass deletes the moved copies of the old manifests,
	// manifest lists and position delete files, and keeps every file
	// referenced.
	if _, err := d.svc.Maintain(context.Background(), d.table("kv").Def().ID, true); err != nil {
		t.Fatal(err)
	}
	wantOnlyReferenced(t, d.lake("kv"), filepath.Join(b, "warehouse"))
	if got := lakeModel(t, d, "kv"); !maps.Equal(got, m) {
		t.Fatalf("after maintenance: %s, want %s", describe(got), describe(m))
	}
	d.upsert("kv", m, ids(140, 160), 4, "c")
	d.round("kv")
	if got := lakeModel(t, d, "kv"); !maps.Equal(got, m) {
		t.Fatalf("after a round at the new place: %s, want %s", describe(got), describe(m))
	}
}
