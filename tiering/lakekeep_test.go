package tiering

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// writePosDeletes commits a position delete file deleting rows pos of the
// data file of task, written outside Lakestream's rounds, in a snapshot
// marked as Lakestream's (ownSnapshot) so that the check of foreign
// snapshots (foreign.go, tested in foreign_test.go) lets it through: what
// is tested here is the reading of such deletes.
func writePosDeletes(t *testing.T, e *lakeEnv, lt *lakeTable, task table.FileScanTask, pos []int64) {
	t.Helper()
	ctx := context.Background()
	tbl := lt.state.Load().tbl
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fieldID := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "file_path", Type: arrow.BinaryTypes.String, Metadata: fieldID(2147483546)},
		{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(2147483545)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, p := range pos {
		b.Field(0).(*array.StringBuilder).Append(task.File.FilePath())
		b.Field(1).(*array.Int64Builder).Append(p)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := strings.TrimSuffix(task.File.FilePath(), ".parquet") + "-deletes.parquet"
	out, err := fs.(icebergio.WriteFileIO).Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, out, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Stat()
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile,
		task.File.Partition(), nil, nil, int64(len(pos)), info.Size())
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if tbl.Metadata().Version() < 2 {
		if err := tx.UpgradeFormatVersion(2); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.NewRowDelta(ownSnapshot(lt.state.Load())).AddDeletes(db.Build()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.reload(ctx, lt); err != nil {
		t.Fatal(err)
	}
}

// "t$lake" applies the snapshot's position deletes, whoever wrote them:
// the rows, count(*) and the union read lose exactly the deleted rows,
// also when the file's columns come from the read cache.
func TestLakeReadAppliesPositionDeletes(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE lt (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR) WITH ('datalake.freshness'='1h')`)
	e.ingest("lt", 0, 100)
	e.round("lt")
	for _, name := range []string{"lt", "lt$lake"} { // fills the read cache
		if got := e.totals(name); got != want(100) {
			t.Fatalf("%s before the deletes: %v", name, got)
		}
	}
	lt := e.svc.lookup(e.table("lt").Def().ID)
	tasks, err := lt.state.Load().tbl.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) != 1 {
		t.Fatalf("planned %d files, %v; want 1", len(tasks), err)
	}
	// Row i of the file is id i (one write, one file).
	writePosDeletes(t, e, lt, tasks[0], []int64{3, 5, 97})
	dropped := int64(3 + 5 + 97)
	wantTot := totals{n: 97, sum: want(100).sum - dropped, distinct: 97}
	for _, name := range []string{"lt$lake", "lt"} {
		if got := e.totals(name); got != wantTot {
			t.Fatalf("%s after deleting positions 3, 5, 97: %v, want %v", name, got, wantTot)
		}
		st, err := e.store.Table(context.Background(), "", name)
		if err != nil {
			t.Fatal(err)
		}
		if n := countPlan(t, context.Background(), st); n != 97 {
			t.Fatalf("count(*) of %s: %d, want 97", name, n)
		}
	}
	e.ingest("lt", 100, 10)
	if got := e.totals("lt"); got.n != 107 {
		t.Fatalf("union with the log tail: %v, want 107 rows", got)
	}
}

// writeForeignFile commits a data file without a row map holding rec (in
// the Iceberg table's columns), and returns the error of reloading the
// lake. Its snapshot is marked as Lakestream's (ownSnapshot), as files
// without a row map may be in Lakestream's snapshots (a table another
// engine rewrote, with a "replace"): another engine's own append is
// refused before its files are looked at (foreign_test.go).
func writeForeignFile(t *testing.T, e *lakeEnv, lt *lakeTable, rec arrow.RecordBatch) error {
	t.Helper()
	ctx := context.Background()
	tbl := lt.state.Load().tbl
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec = array.NewRecordBatch(sch, rec.Columns(), rec.NumRows())
	defer rec.Release()
	path := tbl.Location() + "/data/foreign.parquet"
	out, err := fs.(icebergio.WriteFileIO).Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sch, out, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta, err := w.FileMetadata()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.Stat()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: tbl.Schema(), Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: path, FileSize: info.Size(), Content: iceberg.EntryContentData,
		PartitionValues: map[int]any{}, Properties: tbl.Properties(), FormatVersion: tbl.Metadata().Version(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(ownSnapshot(lt.state.Load())).AddRows(df).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return e.svc.reload(ctx, lt)
}

// A data file without a row map (written by another engine) in a
// primary-key table's lake: the offsets of its rows, and so the state the
// lake holds, are unknown, so the lake is refused with an error naming
// the file (a log table's lake reads such a file as rows).
func TestPKLakeRefusesFileWithoutRowMap(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id)) WITH ('datalake.freshness'='1h')`)
	model := map[int64]pkRow{}
	ids := []int64{0, 1, 2, 3, 4}
	upsertKV(t, e.table("kv"), model, ids, func(id int64) *float64 { return ptr(float64(id)) }, func(int64) *string { return ptr("a") })
	e.round("kv")
	lt := e.svc.lookup(e.table("kv").Def().ID)
	b := array.NewRecordBuilder(memory.DefaultAllocator, e.table("kv").Schema())
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(100)
	b.Field(1).(*array.Float64Builder).Append(100)
	b.Field(2).(*array.StringBuilder).Append("f")
	rec := b.NewRecordBatch()
	defer rec.Release()
	err := writeForeignFile(t, e, lt, rec)
	if err == nil || !strings.Contains(err.Error(), "foreign.parquet has no row map") {
		t.Fatalf("reload of a PK lake with a foreign file: %v, want the file named", err)
	}
}
