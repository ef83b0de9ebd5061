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

// writePosDeletes commits, as another engine would, a position delete file
// deleting rows pos of the data file of task.
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
	if err := tx.NewRowDelta(nil).AddDeletes(db.Build()).Commit(ctx); err != nil {
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
