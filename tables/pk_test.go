package tables_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/tables"
)

// pkRows reads the table's state through the engine's scan interface.
func pkRows(t *testing.T, e *env, name string) []string {
	t.Helper()
	st, err := e.store.Table(context.Background(), "", name)
	if err != nil {
		t.Fatal(err)
	}
	_, rows := scanPlan(t, st, nil)
	return sorted(rows)
}

// pkLookup looks keys up and returns the rows found.
func pkLookup(t *testing.T, e *env, tbl *tables.Table, keys arrow.RecordBatch) []string {
	t.Helper()
	defer keys.Release()
	rec, err := tbl.Lookup(context.Background(), keys, nil)
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	defer rec.Release()
	return rowStrings(rec)
}

// sameSeq compares rows in order.
func sameSeq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestPKUpsertDeleteLookup(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE kv (id BIGINT, v VARCHAR, n BIGINT, PRIMARY KEY (id)) WITH ('bucket.num' = '3')`)
	tbl := e.table("kv")
	if !tbl.HasPrimaryKey() {
		t.Fatal("HasPrimaryKey false")
	}
	e.write(tbl, record(t, e.mem, i64("id", false, 1, 2, 3), str("v", "a", "b", "c"), i64("n", true, 10, 20, 30)))
	e.write(tbl, record(t, e.mem, i64("id", false, 2, 4, 2), str("v", "b2", "d", "b3"), i64("n", true, 21, 40, 22)))
	sameRows(t, "state", pkRows(t, e, "kv"), sorted([]string{"1|a|10", "2|b3|22", "3|c|30", "4|d|40"}))

	// A partial update changes only the columns carried.
	e.write(tbl, record(t, e.mem, i64("id", false, 1), i64("n", true, 11)))
	sameRows(t, "after partial", pkRows(t, e, "kv"), sorted([]string{"1|a|11", "2|b3|22", "3|c|30", "4|d|40"}))

	keys := record(t, e.mem, i64("id", false, 3, 9, 1))
	n, err := tbl.Delete(context.Background(), keys)
	keys.Release()
	if err != nil || n != 2 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	sameRows(t, "after delete", pkRows(t, e, "kv"), sorted([]string{"2|b3|22", "4|d|40"}))
	got := pkLookup(t, e, tbl, record(t, e.mem, i64("id", false, 4, 1, 2, 4)))
	sameSeq(t, "lookup", got, []string{"4|d|40", "2|b3|22", "4|d|40"})

	ow := record(t, e.mem, i64("id", false, 2, 5), str("v", nil, "e"), i64("n", true, nil, 50))
	if n, err := tbl.Overwrite(context.Background(), ow); err != nil || n != 2 {
		t.Fatalf("overwrite: %d, %v", n, err)
	}
	ow.Release()
	want := sorted([]string{"2|(null)|(null)", "4|d|40", "5|e|50"})
	sameRows(t, "after overwrite", pkRows(t, e, "kv"), want)

	cl, err := e.store.Table(context.Background(), "", "kv$changelog")
	if err != nil {
		t.Fatal(err)
	}
	_, rows := scanPlan(t, cl, []int{0, 1, 2, 3})
	wantCL := sorted([]string{
		"1|a|10|+I", "2|b|20|+I", "3|c|30|+I",
		"2|b|20|-U", "2|b3|22|+U", "4|d|40|+I",
		"1|a|10|-U", "1|a|11|+U",
		"1|a|11|-D", "3|c|30|-D",
		"2|b3|22|-U", "2|(null)|(null)|+U", "5|e|50|+I",
	})
	sameRows(t, "changelog", sorted(rows), wantCL)

	e.reopen()
	tbl = e.table("kv")
	sameRows(t, "state after reopen", pkRows(t, e, "kv"), want)
	got = pkLookup(t, e, tbl, record(t, e.mem, i64("id", false, 5, 1)))
	sameSeq(t, "lookup after reopen", got, []string{"5|e|50"})
}

func TestPKWriteValidation(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE kv (id BIGINT, v VARCHAR NOT NULL, PRIMARY KEY (id))`)
	tbl := e.table("kv")
	var se *tables.SchemaError
	rec := record(t, e.mem, str("v", "a"))
	_, err := tbl.Write(context.Background(), rec)
	rec.Release()
	if !errors.As(err, &se) {
		t.Fatalf("write without the key: %v", err)
	}
	rec = record(t, e.mem, i64("id", true, nil), str("v", "a"))
	_, err = tbl.Write(context.Background(), rec)
	rec.Release()
	if !errors.As(err, &se) {
		t.Fatalf("write with a null key: %v", err)
	}
	rec = record(t, e.mem, i64("id", false, 1))
	_, err = tbl.Write(context.Background(), rec)
	rec.Release()
	if !errors.As(err, &se) {
		t.Fatalf("partial write of a new key without its NOT NULL column: %v", err)
	}
	e.write(tbl, record(t, e.mem, i64("id", false, 1), str("v", "a")))
	e.write(tbl, record(t, e.mem, i64("id", false, 1))) // an existing key: v is kept
	sameRows(t, "state", pkRows(t, e, "kv"), []string{"1|a"})
}

// Rows stored before an ADD COLUMN read the new column as NULL; a partial
// update sets it.
func TestPKAddColumn(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num' = '2')`)
	e.write(e.table("kv"), record(t, e.mem, i64("id", false, 1, 2), str("v", "a", "b")))
	e.mustExec(`ALTER TABLE kv ADD COLUMN n BIGINT`)
	tbl := e.table("kv")
	sameRows(t, "after add column", pkRows(t, e, "kv"), []string{"1|a|(null)", "2|b|(null)"})
	e.write(tbl, record(t, e.mem, i64("id", false, 2, 3), i64("n", true, 20, 30)))
	want := []string{"1|a|(null)", "2|b|20", "3|(null)|30"}
	sameRows(t, "after partial update", pkRows(t, e, "kv"), want)
	got := pkLookup(t, e, tbl, record(t, e.mem, i64("id", false, 1, 2, 3)))
	sameSeq(t, "lookup", got, want)
	e.reopen()
	sameRows(t, "after reopen", pkRows(t, e, "kv"), want)
	got = pkLookup(t, e, e.table("kv"), record(t, e.mem, i64("id", false, 3, 1)))
	sameSeq(t, "lookup after reopen", got, []string{"3|(null)|30", "1|a|(null)"})
}

// A table without a primary key keeps its append semantics, and the key
// calls refuse it.
func TestPKCallsOnLogTable(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE logs (id BIGINT, v VARCHAR)`)
	tbl := e.table("logs")
	e.write(tbl, record(t, e.mem, i64("id", true, 1, 1), str("v", "a", "a")))
	sameRows(t, "log table", pkRows(t, e, "logs"), []string{"1|a", "1|a"})
	keys := record(t, e.mem, i64("id", true, 1))
	defer keys.Release()
	if _, err := tbl.Delete(context.Background(), keys); !errors.Is(err, tables.ErrNotPrimaryKey) {
		t.Errorf("delete: %v", err)
	}
	if _, err := tbl.Lookup(context.Background(), keys, nil); !errors.Is(err, tables.ErrNotPrimaryKey) {
		t.Errorf("lookup: %v", err)
	}
	if tbl.HasPrimaryKey() {
		t.Error("HasPrimaryKey of a log table")
	}
}

// Lookup projects the columns asked for, and refuses columns that are not
// keys.
func TestPKLookupProjectsAndChecks(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE kv (r VARCHAR, id BIGINT, v VARCHAR, PRIMARY KEY (r, id)) WITH ('bucket.num' = '4')`)
	tbl := e.table("kv")
	e.write(tbl, record(t, e.mem, str("r", "eu", "us", "eu"), i64("id", false, 1, 1, 2), str("v", "a", "b", "c")))
	keys := record(t, e.mem, i64("id", false, 2, 1, 1), str("r", "eu", "us", "xx"))
	defer keys.Release()
	rec, err := tbl.Lookup(context.Background(), keys, []int{2, 0})
	if err != nil {
		t.Fatal(err)
	}
	sameSeq(t, "projected lookup", rowStrings(rec), []string{"c|eu", "b|us"})
	if rec.Schema().Field(0).Name != "v" {
		t.Errorf("schema %v", rec.Schema())
	}
	rec.Release()
	bad := record(t, e.mem, i64("id", false, 1), str("r", "eu"), str("v", "x"))
	defer bad.Release()
	var se *tables.SchemaError
	if _, err := tbl.Lookup(context.Background(), bad, nil); !errors.As(err, &se) {
		t.Errorf("lookup with a non-key column: %v", err)
	}
	if _, err := tbl.Delete(context.Background(), bad); !errors.As(err, &se) {
		t.Errorf("delete with a non-key column: %v", err)
	}
}

// The merge engines' refusals are SchemaErrors (InvalidArgument for
// clients), naming the column, and write nothing.
func TestPKEngineRefusals(t *testing.T) {
	e := newEnv(t, nil)
	e.mustExec(`CREATE TABLE f (id BIGINT, a VARCHAR, PRIMARY KEY (id)) WITH ('merge-engine' = 'first_row')`)
	e.mustExec(`CREATE TABLE v (id BIGINT, ver BIGINT, a VARCHAR, PRIMARY KEY (id))
		WITH ('merge-engine' = 'versioned', 'merge-engine.versioned.ver-column' = 'ver')`)
	e.mustExec(`CREATE TABLE g (id BIGINT, total TINYINT, PRIMARY KEY (id))
		WITH ('merge-engine' = 'aggregation', 'fields.total.agg' = 'sum')`)
	tests := []struct {
		table string
		rec   arrow.RecordBatch
		want  string
	}{
		{"f", record(t, e.mem, i64("id", false, 1)), `column "a" is missing: the first_row merge engine takes whole rows only`},
		{"v", record(t, e.mem, i64("id", false, 1), str("a", "x")), `the version column "ver" of the versioned merge engine is missing`},
	}
	for _, tt := range tests {
		_, err := e.table(tt.table).Write(context.Background(), tt.rec)
		tt.rec.Release()
		var se *tables.SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("write to %s: %v, want a SchemaError with %q", tt.table, err, tt.want)
		}
	}
	g := e.table("g")
	small := func(v int8) arrow.RecordBatch {
		b := array.NewInt8Builder(e.mem)
		defer b.Release()
		b.Append(v)
		a := b.NewArray()
		defer a.Release()
		ids := array.NewInt64Builder(e.mem)
		defer ids.Release()
		ids.Append(1)
		ia := ids.NewArray()
		defer ia.Release()
		s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "total", Type: arrow.PrimitiveTypes.Int8, Nullable: true}}, nil)
		return array.NewRecordBatch(s, []arrow.Array{ia, a}, 1)
	}
	e.write(g, small(100))
	over := small(100)
	_, err := g.Write(context.Background(), over)
	over.Release()
	var se *tables.SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), `sum of column "total" overflows its type int8`) {
		t.Errorf("overflowing sum: %v", err)
	}
	sameRows(t, "after the refused write", pkRows(t, e, "g"), []string{"1|100"})
}
