package tables_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

func TestConformSameSchemaIsIdentity(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	rec := events(t, e.mem, 0, 10)
	defer rec.Release()
	out, err := tbl.Conform(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(tbl.Schema()) {
		t.Errorf("schema %v, want %v", out.Schema(), tbl.Schema())
	}
	sameRows(t, "conformed", rowStrings(out), rowStrings(rec))
}

// Columns are matched by name, in any order and (failing an exact match)
// any case; the result has the table's order.
func TestConformReordersAndIgnoresCase(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	rec := record(t, e.mem,
		tsUS("TS", 5, 6),
		str("kind", "a", nil),
		i64("Id", false, 1, 2),
		f64("amount", 1.5, nil),
	)
	defer rec.Release()
	out, err := tbl.Conform(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(tbl.Schema()) {
		t.Fatalf("schema %v, want %v", out.Schema(), tbl.Schema())
	}
	got := projectRows(rowStrings(out), 0, 1, 2)
	want := []string{"1|1.5|a", "2|(null)|(null)"}
	sameRows(t, "reordered", got, want)
}

func TestConformFillsMissingNullableColumns(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	rec := record(t, e.mem, i64("id", false, 1, 2, 3), f64("amount", 1.0, 2.0, 3.0))
	defer rec.Release()
	out, err := tbl.Conform(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(tbl.Schema()) {
		t.Fatalf("schema %v, want %v", out.Schema(), tbl.Schema())
	}
	for _, c := range []int{2, 3} {
		if n := out.Column(c).NullN(); n != 3 {
			t.Errorf("column %s: %d nulls, want 3", out.ColumnName(c), n)
		}
	}
	// And the result writes and reads back.
	out.Retain()
	if _, err := tbl.Write(ctxTimeout(t), out); err != nil {
		t.Fatal(err)
	}
	out.Release()
	sameRows(t, "read back", flatten(readBuckets(t, tbl, allCols(tbl))), []string{"1|1|(null)|(null)", "2|2|(null)|(null)", "3|3|(null)|(null)"})
}

// expectSchemaError checks that err is a *SchemaError about column.
func expectSchemaError(t *testing.T, err error, column string, words ...string) {
	t.Helper()
	var se *tables.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want a *tables.SchemaError", err, err)
	}
	if se.Column != column {
		t.Errorf("SchemaError.Column = %q, want %q (error: %v)", se.Column, column, err)
	}
	if !strings.Contains(err.Error(), column) {
		t.Errorf("error %q does not name column %q", err, column)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestConformRefusals(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	int64Nullable := i64("id", true, 1, nil)
	for _, tc := range []struct {
		name   string
		cols   []col
		column string
		words  []string
	}{
		{"missing NOT NULL", []col{f64("amount", 1.0)}, "id", []string{"NOT NULL"}},
		{"extra column", []col{i64("id", false, 1), i64("extra", true, 1)}, "extra", nil},
		{"string into bigint", []col{str("id", "1")}, "id", []string{"utf8", "int64"}},
		{"nulls in NOT NULL", []col{int64Nullable}, "id", []string{"NOT NULL", "1 of 2"}},
		{"double into bigint", []col{{arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Float64}, []any{1.0}}}, "id", nil},
		{"bigint into varchar", []col{i64("id", false, 1), {arrow.Field{Name: "kind", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, []any{1}}}, "kind", nil},
		{"bigint into double (lossy)", []col{i64("id", false, 1), {arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, []any{1}}}, "amount", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record(t, e.mem, tc.cols...)
			defer rec.Release()
			out, err := tbl.Conform(rec)
			if err == nil {
				out.Release()
				t.Fatalf("conform accepted %v", rec.Schema())
			}
			expectSchemaError(t, err, tc.column, tc.words...)
		})
	}
}

// Safe widenings are cast: int32 to int64, float32 to float64,
// timestamp[ms] to timestamp[us].
func TestConformWidens(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols)
	tbl := e.table("ev")
	rec := record(t, e.mem,
		col{arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32}, []any{1, -2, 2147483647}},
		col{arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float32, Nullable: true}, []any{0.5, nil, 1.25}},
		col{arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true}, []any{1_700_000_000_123, 0, nil}},
	)
	defer rec.Release()
	out, err := tbl.Conform(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(tbl.Schema()) {
		t.Fatalf("schema %v, want %v", out.Schema(), tbl.Schema())
	}
	ids := out.Column(0).(*array.Int64)
	if got := ids.Int64Values(); got[0] != 1 || got[1] != -2 || got[2] != 2147483647 {
		t.Errorf("ids %v", got)
	}
	amounts := out.Column(1).(*array.Float64)
	if amounts.Value(0) != 0.5 || !amounts.IsNull(1) || amounts.Value(2) != 1.25 {
		t.Errorf("amounts %v", amounts)
	}
	ts := out.Column(3).(*array.Timestamp)
	if ts.Value(0) != 1_700_000_000_123_000 || ts.Value(1) != 0 || !ts.IsNull(2) {
		t.Errorf("timestamps %v, want [1700000000123000 0 (null)]", ts)
	}
	if out.Column(2).NullN() != 3 {
		t.Errorf("kind, missing, has %d nulls, want 3", out.Column(2).NullN())
	}
}
