package planner

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// filterRecord has one row per interesting value; row i has id i.
func filterRecord(mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	const n = 6
	valid := []bool{true, true, true, true, true, false} // row 5 is all NULL
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	b.Field(1).(*array.Int8Builder).AppendValues([]int8{-128, -1, 0, 1, 127, 0}, valid)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{math.Inf(-1), -0.5, 0, math.NaN(), 2.5, 0}, valid)
	b.Field(3).(*array.Float32Builder).AppendValues([]float32{0.1, 1, float32(math.NaN()), 2, 3, 0}, valid)
	b.Field(4).(*array.Decimal128Builder).AppendValues([]decimal128.Num{
		decimal128.FromI64(-150), decimal128.FromI64(0), decimal128.FromI64(125), decimal128.FromI64(150), decimal128.FromI64(99999), {}}, valid)
	b.Field(5).(*array.StringBuilder).AppendValues([]string{"", "B", "a", "b", "é", ""}, valid)
	b.Field(6).(*array.BooleanBuilder).AppendValues([]bool{false, true, false, true, true, false}, valid)
	// 2026-01-01 is day 20454.
	b.Field(7).(*array.Date32Builder).AppendValues([]arrow.Date32{20453, 20454, 20454, 20455, 0, 0}, valid)
	day := int64(86400e6)
	b.Field(8).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
		arrow.Timestamp(20454 * day), arrow.Timestamp(20454*day + 1), arrow.Timestamp(20455 * day), 0, -1, 0}, valid)
	return b.NewRecordBatch()
}

func cond(col string, op Op, kind LiteralKind, text string) Condition {
	return Condition{Column: col, Op: op, Value: Literal{Kind: kind, Text: text}}
}

func TestChangesFilterSemantics(t *testing.T) {
	const (
		num   = LitNumber
		str   = LitString
		tsLit = LitTimestamp
		date  = LitDate
	)
	for _, tc := range []struct {
		where []Condition
		want  []int64
	}{
		{[]Condition{cond("i8", OpGt, num, "0")}, []int64{3, 4}},
		{[]Condition{cond("i8", OpGt, num, "-0.5")}, []int64{2, 3, 4}},
		{[]Condition{cond("i8", OpGe, num, "-1.5")}, []int64{1, 2, 3, 4}},
		{[]Condition{cond("i8", OpLt, num, "0.5")}, []int64{0, 1, 2}},
		{[]Condition{cond("i8", OpEq, num, "0.5")}, nil},
		{[]Condition{cond("i8", OpNe, num, "0.5")}, []int64{0, 1, 2, 3, 4}},
		{[]Condition{cond("i8", OpLt, num, "1e30")}, []int64{0, 1, 2, 3, 4}},
		{[]Condition{cond("i8", OpLt, num, "-1e30")}, nil},
		{[]Condition{cond("I8", OpEq, str, " 127 ")}, []int64{4}},
		{[]Condition{cond("id", OpGt, num, "1.5")}, []int64{2, 3, 4, 5}},
		// NaN is above every number and equal to itself; NULL never compares.
		{[]Condition{cond("f", OpGt, num, "1")}, []int64{3, 4}},
		{[]Condition{cond("f", OpEq, str, "NaN")}, []int64{3}},
		{[]Condition{cond("f", OpLt, str, "nan")}, []int64{0, 1, 2, 4}},
		{[]Condition{cond("f", OpNe, num, "0")}, []int64{0, 1, 3, 4}},
		{[]Condition{cond("f", OpLe, str, "-inf")}, []int64{0}},
		{[]Condition{{Column: "f", Op: OpIsNull}}, []int64{5}},
		{[]Condition{{Column: "f", Op: OpIsNotNull}}, []int64{0, 1, 2, 3, 4}},
		// A FLOAT column compares with the literal as a FLOAT.
		{[]Condition{cond("f32", OpEq, num, "0.1")}, []int64{0}},
		{[]Condition{cond("f32", OpGe, num, "2")}, []int64{2, 3, 4}},
		{[]Condition{cond("d", OpGt, num, "1.25")}, []int64{3, 4}},
		{[]Condition{cond("d", OpGe, num, "1.245")}, []int64{2, 3, 4}},
		{[]Condition{cond("d", OpEq, num, "-1.5")}, []int64{0}},
		{[]Condition{cond("d", OpLt, num, "1e40")}, []int64{0, 1, 2, 3, 4}},
		// Bytewise: "" < "B" < "a" < "b" < "é".
		{[]Condition{cond("s", OpLt, str, "a")}, []int64{0, 1}},
		{[]Condition{cond("s", OpGt, str, "b")}, []int64{4}},
		{[]Condition{cond("s", OpEq, str, "")}, []int64{0}},
		{[]Condition{cond("b", OpEq, LitBool, "true")}, []int64{1, 3, 4}},
		{[]Condition{cond("b", OpLt, str, "true")}, []int64{0, 2}},
		{[]Condition{cond("dt", OpEq, date, "2026-01-01")}, []int64{1, 2}},
		{[]Condition{cond("dt", OpGt, str, "2026-01-01")}, []int64{3}},
		{[]Condition{cond("dt", OpGt, tsLit, "2026-01-01 00:00:01")}, []int64{3}},
		{[]Condition{cond("dt", OpGe, tsLit, "2026-01-01")}, []int64{1, 2, 3}},
		{[]Condition{cond("ts", OpGe, tsLit, "2026-01-01")}, []int64{0, 1, 2}},
		{[]Condition{cond("ts", OpGt, tsLit, "2026-01-01 00:00:00.0000005")}, []int64{1, 2}},
		// An offset counts where DuckDB reads a TIMESTAMPTZ, and is dropped
		// from a TIMESTAMP literal (literal.go).
		{[]Condition{cond("ts", OpGt, LitTimestampTZ, "2026-01-01T01:00:00+02:00")}, []int64{0, 1, 2}},
		{[]Condition{cond("ts", OpGt, tsLit, "2026-01-01T01:00:00+02:00")}, []int64{2}},
		{[]Condition{cond("ts", OpGt, str, "2026-01-01T01:00:00+02:00")}, []int64{0, 1, 2}},
		{[]Condition{cond("ts", OpGe, tsLit, "2026-01-01 00:00:00.0000009")}, []int64{0, 1, 2}},
		{[]Condition{cond("dt", OpLt, LitTimestampTZ, "2026-01-01 00:00:00-01")}, []int64{0, 1, 2, 4}},
		{[]Condition{cond("dt", OpLt, tsLit, "2026-01-01 00:00:00-01")}, []int64{0, 4}},
		// A DOUBLE literal compares with integers and a FLOAT column as
		// DOUBLEs: the FLOAT 0.1 is above the DOUBLE 0.1.
		{[]Condition{cond("f32", OpEq, num, "1e-1")}, nil},
		{[]Condition{cond("f32", OpGt, num, "1e-1")}, []int64{0, 1, 2, 3, 4}},
		{[]Condition{cond("f32", OpEq, str, "0.1")}, []int64{0}},
		{[]Condition{cond("i8", OpGe, num, "1e0")}, []int64{3, 4}},
		{[]Condition{cond("id", OpLe, num, "2.5e0")}, []int64{0, 1, 2}},
		// A string is cast to the decimal's scale, rounded half away from
		// zero; a number compares exactly.
		{[]Condition{cond("d", OpEq, str, "1.245")}, []int64{2}},
		{[]Condition{cond("d", OpEq, str, "-1.495")}, []int64{0}},
		{[]Condition{cond("d", OpEq, num, "1.245")}, nil},
		{[]Condition{cond("d", OpEq, num, "1.25e0")}, []int64{2}},
		{[]Condition{cond("b", OpEq, str, "YES")}, []int64{1, 3, 4}},
		{[]Condition{cond("b", OpEq, str, "0")}, []int64{0, 2}},
		{[]Condition{cond("ts", OpLt, date, "2026-01-02")}, []int64{0, 1, 3, 4}},
		{[]Condition{cond("ts", OpLt, str, "1970-01-01")}, []int64{4}},
		// Conjunctions, and runs of kept rows that need concatenating.
		{[]Condition{cond("id", OpNe, num, "2"), cond("s", OpNe, str, "b")}, []int64{0, 1, 4}},
		{[]Condition{cond("i8", OpNe, num, "-1"), {Column: "i8", Op: OpIsNotNull}, cond("b", OpEq, LitBool, "false")}, []int64{0, 2}},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rec := filterRecord(mem)
		// Bound as if every column were read, then sending only id.
		_, f, err := BindFilter(rec.Schema(), []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, tc.where)
		if err != nil {
			t.Fatalf("%v: %v", tc.where, err)
		}
		f.out, f.schema = 1, arrow.NewSchema(rec.Schema().Fields()[:1], nil)
		got, err := f.Apply(rec, mem)
		if err != nil {
			t.Fatalf("%v: %v", tc.where, err)
		}
		var ids []int64
		if got != nil {
			if got.NumCols() != 1 {
				t.Errorf("%v: %d columns, want 1", tc.where, got.NumCols())
			}
			ids = slices.Clone(got.Column(0).(*array.Int64).Int64Values())
			got.Release()
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("%v: ids %v, want %v", tc.where, ids, tc.want)
		}
		mem.AssertSize(t, 0)
	}
}

func TestChangesFilterBindErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := filterRecord(mem)
	defer rec.Release()
	list := arrow.NewSchema(append(rec.Schema().Fields(), arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}), nil)
	for _, tc := range []struct {
		c     Condition
		words string
	}{
		{cond("id", OpEq, LitString, "abc"), `id = 'abc': cannot convert string literal "abc" to an integer`},
		{cond("i8", OpEq, LitString, "1.5"), "i8"},
		{cond("id", OpEq, LitBool, "true"), "id"},
		{cond("f", OpEq, LitString, "x"), "floating-point"},
		{cond("d", OpEq, LitDate, "2026-01-01"), "a number"},
		{cond("s", OpEq, LitNumber, "1"), "compare it with a 'string'"},
		{cond("b", OpEq, LitString, "maybe"), "a boolean"},
		{cond("dt", OpEq, LitString, "tomorrow"), "a date"},
		{cond("ts", OpEq, LitNumber, "1"), "a timestamp"},
		{cond("nope", OpEq, LitNumber, "1"), `column "nope" not found`},
		{cond("l", OpEq, LitNumber, "1"), "cannot filter on l"},
	} {
		_, _, err := BindFilter(list, []int{0}, []Condition{tc.c})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%v: %v, want ErrInvalid mentioning %q", tc.c, err, tc.words)
		}
	}
}

// TestChangesFilterReadColumns: the followers read the selected columns,
// then each filter column not selected, once.
func TestChangesFilterReadColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := filterRecord(mem)
	defer rec.Release()
	where := []Condition{cond("s", OpEq, LitString, "a"), cond("ID", OpGt, LitNumber, "0"),
		{Column: "s", Op: OpIsNotNull}}
	read, f, err := BindFilter(rec.Schema(), []int{2, 0}, where)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read, []int{2, 0, 5}) || f.out != 2 || f.conds[0].col != 2 || f.conds[1].col != 1 || f.conds[2].col != 2 {
		t.Fatalf("read %v out %d conds %+v", read, f.out, f.conds)
	}
	if read, f, err := BindFilter(rec.Schema(), []int{2, 0}, nil); err != nil || f != nil || !slices.Equal(read, []int{2, 0}) {
		t.Fatalf("no WHERE: %v %v %v", read, f, err)
	}
}
