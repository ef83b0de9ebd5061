package tiering

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// pkRow is a row of the kv test table: (id, amount, kind).
type pkRow struct {
	amount float64
	kind   string
}

// pkModel is the rows of a primary-key table, by key, as the writes made
// them.
type pkModel map[int64]pkRow

const createKV = `CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
	WITH ('bucket.num'='%d', 'datalake.freshness'='1h'%s)`

// upsert writes whole rows of ids (in one write).
func (e *lakeEnv) upsert(name string, m pkModel, ids []int64, amount float64, kind string) {
	e.t.Helper()
	t := e.table(name)
	b := array.NewRecordBuilder(memory.DefaultAllocator, t.Schema())
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Float64Builder).Append(amount)
		b.Field(2).(*array.StringBuilder).Append(kind)
		m[id] = pkRow{amount, kind}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Write(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

// partial sets the amount of ids, leaving kind alone (a partial update;
// a new key gets a null kind, "" in the model).
func (e *lakeEnv) partial(name string, m pkModel, ids []int64, amount float64) {
	e.t.Helper()
	t := e.table(name)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "amount", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Float64Builder).Append(amount)
		r := m[id]
		r.amount = amount
		m[id] = r
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Write(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

// remove deletes ids.
func (e *lakeEnv) remove(name string, m pkModel, ids []int64) {
	e.t.Helper()
	t := e.table(name)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		delete(m, id)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := t.Delete(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

// icebergRows reads the lake table of name through iceberg-go's own
// scanner, which applies position deletes, as another engine would.
func (e *lakeEnv) icebergRows(name string) (pkModel, error) {
	e.t.Helper()
	ctx := context.Background()
	tbl, err := e.ice.LoadTable(ctx, table.Identifier{"default", name})
	if err != nil {
		return nil, err
	}
	out := pkModel{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		amounts := rec.Column(1).(*array.Float64)
		kinds := rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			id := ids.Value(i)
			if _, dup := out[id]; dup {
				return nil, fmt.Errorf("key %d is in the lake twice", id)
			}
			out[id] = pkRow{amounts.Value(i), kinds.Value(i)}
		}
	}
	return out, nil
}

// checkLake asserts the Iceberg table reads exactly m.
func (e *lakeEnv) checkLake(name string, m pkModel, when string) {
	e.t.Helper()
	got, err := e.icebergRows(name)
	if err != nil {
		e.t.Fatalf("%s: %v", when, err)
	}
	if !maps.Equal(got, m) {
		e.t.Fatalf("%s: the Iceberg table reads %s, want %s", when, describe(got), describe(m))
	}
}

func describe(m pkModel) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	fmt.Fprintf(&b, "%d keys:", len(m))
	for i, k := range keys {
		if i == 20 {
			b.WriteString(" ...")
			break
		}
		fmt.Fprintf(&b, " %d=%v/%q", k, m[k].amount, m[k].kind)
	}
	return b.String()
}

func ids(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// A primary-key table tiers: its Iceberg table (format v2, the key as
// identifier field) reads, through iceberg-go's scanner, exactly one row
// per live key as of each round, over inserts, updates, partial updates
// and deletes, in rows of this round and of earlier ones.
func TestPKRoundsTierTheTableState(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(fmt.Sprintf(createKV, 2, ""))
	m := pkModel{}
	e.upsert("kv", m, ids(0, 100), 1, "a")
	res := e.round("kv")
	if res.Rows != 100 {
		t.Fatalf("first round tiered %d rows, want 100", res.Rows)
	}
	e.checkLake("kv", m, "after inserts")
	lt := e.svc.lookup(e.table("kv").Def().ID)
	md := lt.state.Load().tbl.Metadata()
	if md.Version() != 2 {
		t.Fatalf("format version %d, want 2", md.Version())
	}
	if got := md.CurrentSchema().IdentifierFieldIDs; len(got) != 1 || got[0] != 1 {
		t.Fatalf("identifier fields %v, want [1] (id)", got)
	}
	e.upsert("kv", m, ids(50, 150), 2, "b") // updates and inserts
	e.round("kv")
	e.checkLake("kv", m, "after upserts")
	e.partial("kv", m, ids(0, 10), 3)
	e.remove("kv", m, ids(90, 120))
	e.upsert("kv", m, ids(95, 100), 4, "c") // deleted, then back
	e.partial("kv", m, ids(95, 97), 5)
	e.round("kv")
	e.checkLake("kv", m, "after partial updates and deletes")
	// Rows written and superseded within one round.
	e.upsert("kv", m, ids(200, 210), 6, "d")
	e.upsert("kv", m, ids(200, 210), 7, "e")
	e.remove("kv", m, ids(205, 210))
	e.round("kv")
	e.checkLake("kv", m, "after a round that supersedes its own rows")
	// The lake's state is rebuilt from the lake at a restart and goes on.
	e.restart(Config{})
	e.remove("kv", m, ids(0, 5))
	e.upsert("kv", m, ids(140, 145), 8, "f")
	e.round("kv")
	e.checkLake("kv", m, "after a restart")
	// A round with nothing new commits nothing.
	snaps := len(e.svc.lookup(e.table("kv").Def().ID).state.Load().tbl.Metadata().Snapshots())
	e.round("kv")
	if n := len(e.svc.lookup(e.table("kv").Def().ID).state.Load().tbl.Metadata().Snapshots()); n != snaps {
		t.Fatalf("%d snapshots after an empty round, want %d", n, snaps)
	}
}

// A log table's rounds write no delete files.
func TestLogTableRoundsWriteNoDeletes(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	for i := 0; i < 3; i++ {
		e.ingest("bars", i*100, 100)
		e.round("bars")
	}
	st := e.svc.lookup(e.table("bars").Def().ID).state.Load()
	if st.pk != nil {
		t.Fatal("a log table has a primary-key lake state")
	}
	tasks, err := st.tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
			t.Fatalf("data file %s of a log table has delete files", task.File.FilePath())
		}
	}
	if got := st.tbl.CurrentSnapshot().Summary.Properties["total-delete-files"]; got != "0" {
		t.Fatalf("snapshot summary total-delete-files = %q, want 0", got)
	}
	if got := st.tbl.Metadata().CurrentSchema().IdentifierFieldIDs; len(got) != 0 {
		t.Fatalf("a log table's schema has identifier fields %v", got)
	}
}

var _ = iceberg.EntryContentPosDeletes
