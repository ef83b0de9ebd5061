package duck

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// Tables for the pushdown tests: they drop every row a pushed filter
// rejects, so that a wrong filter changes query results.

var (
	tsNaiveNS = &arrow.TimestampType{Unit: arrow.Nanosecond}
	tsUTCms   = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	dec10_2   = &arrow.Decimal128Type{Precision: 10, Scale: 2}
)

// typedRecord builds n rows of a table with a column of each type filters
// are converted to; nulls, NaN, negative timestamps, long strings.
func typedRecord(mem memory.Allocator, n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "dec", Type: dec10_2, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "tsn", Type: tsNaiveNS, Nullable: true},
		{Name: "tsm", Type: tsUTCms, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "bl", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "big", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	jan1 := int32(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	mar1 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range n {
		for c := range schema.NumFields() {
			if (i+c)%11 == 5 {
				b.Field(c).AppendNull()
			}
		}
		app := func(c int, f func()) {
			if (i+c)%11 != 5 {
				f()
			}
		}
		app(0, func() { b.Field(0).(*array.Int8Builder).Append(int8(i*7%200 - 100)) })
		app(1, func() { b.Field(1).(*array.Int32Builder).Append(int32(i*1000 - 30000)) })
		app(2, func() { b.Field(2).(*array.Uint16Builder).Append(uint16(i * 1000)) })
		app(3, func() {
			v := float32(i)/10 - 3
			if i == 17 {
				v = float32(math.NaN())
			}
			b.Field(3).(*array.Float32Builder).Append(v)
		})
		app(4, func() { b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*37 - 1000))) })
		app(5, func() { b.Field(5).(*array.Date32Builder).Append(arrow.Date32(jan1 + int32(i-30))) })
		app(6, func() {
			us := int64(i%24)*3_600_000_000 + int64(i)*61_001_000
			b.Field(6).(*array.Time64Builder).Append(arrow.Time64(us))
		})
		app(7, func() { b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i-30) * 1_000_000_500)) })
		app(8, func() {
			b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(mar1 + int64(i)*3_600_000 + int64(i%3)))
		})
		app(9, func() { b.Field(9).(*array.BooleanBuilder).Append(i%3 == 0) })
		app(10, func() { b.Field(10).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("k%02d", i))) })
		app(11, func() {
			s := fmt.Sprintf("s%02d", i)
			if i%10 == 0 {
				s = strings.Repeat("x", 40) + s
			}
			b.Field(11).(*array.StringBuilder).Append(s)
		})
		app(12, func() { b.Field(12).(*array.Int64Builder).Append(int64(i)*1e15 - 3e16) })
	}
	return b.NewRecordBatch()
}

// pushdownTables registers events, users and ty as tables that apply the
// pushed filters row by row — the most any pruning could drop — and
// returns the engine over them plus an unlocked engine holding the same
// rows in native DuckDB tables of the same names.
func pushdownTables(t *testing.T) (lake, native *Engine, tables map[string]*fakeTable) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	tables = map[string]*fakeTable{}
	add := func(name string, rec arrow.RecordBatch) {
		defer rec.Release()
		full := name
		if !strings.Contains(name, ".") {
			full = "default." + name
		}
		ft := newFakeTable(full, rec, 3, 4)
		t.Cleanup(ft.release)
		tables[name] = ft
		r.add(&filteringTable{ft})
	}
	add("events", eventsRecord(mem, 30))
	add("users", eventsRecord(mem, 8))
	add("ty", typedRecord(mem, 60))
	add("mydb.events", eventsRecord(mem, 12))
	lake = newTestEngine(t, r)
	// Qualified names reach Lakestream tables from the native engine too:
	// it must not push filters.
	native, err := newEngine(r, Options{Threads: 2, NoFilterPushdown: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { native.Close() })
	for _, name := range []string{"events", "users", "ty"} {
		if err := execAll(native.db, fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM lakestream_scan('default', '%s')", name, name)); err != nil {
			t.Fatal(err)
		}
	}
	return lake, native, tables
}

// filteringTable is a fakeTable whose scans drop every row that a pushed
// filter rejects, with its own evaluation of scan.Filter (the contract
// tables/prune.go documents), so that a wrong pushdown changes results.
type filteringTable struct{ *fakeTable }

func (t *filteringTable) Plan(ctx context.Context, req scan.Request) (scan.Plan, error) {
	p, err := t.fakeTable.Plan(ctx, scan.Request{Columns: req.Columns})
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.requests[len(t.requests)-1] = req
	t.mu.Unlock()
	out := &fakePlan{schema: p.Schema()}
	for _, part := range p.Parts() {
		out.parts = append(out.parts, &filteringPart{part.(*fakePart), req.Filters})
	}
	return out, nil
}

type filteringPart struct {
	*fakePart
	filters []scan.Filter
}

func (p *filteringPart) Open(ctx context.Context) (scan.RecordStream, error) {
	kept := &fakePart{t: p.t, cols: p.cols, schema: p.schema}
	for _, rec := range p.recs {
		for i := range int(rec.NumRows()) {
			ok, err := rowSatisfies(rec, i, p.filters)
			if err != nil {
				return nil, err
			}
			if ok {
				kept.recs = append(kept.recs, rec.NewSlice(int64(i), int64(i+1)))
			}
		}
	}
	s, err := kept.Open(ctx)
	return &releasingStream{RecordStream: s, recs: kept.recs}, err
}

type releasingStream struct {
	scan.RecordStream
	recs []arrow.RecordBatch
}

func (s *releasingStream) Close() error {
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
	return s.RecordStream.Close()
}

// rowSatisfies evaluates the filters on row i: nulls satisfy only IS NULL;
// NaN equals NaN and is above every number; strings compare bytewise;
// values are of the column's Go type, timestamps in the column's unit. An
// error reports a value of the wrong type.
func rowSatisfies(rec arrow.RecordBatch, i int, fs []scan.Filter) (bool, error) {
	for _, f := range fs {
		col := rec.Column(f.Column)
		switch f.Op {
		case "IS NULL":
			if col.IsValid(i) {
				return false, nil
			}
			continue
		case "IS NOT NULL":
			if col.IsNull(i) {
				return false, nil
			}
			continue
		}
		if col.IsNull(i) {
			return false, nil
		}
		c, ok := compareRow(col, i, f.Value)
		if !ok {
			return false, fmt.Errorf("filter %+v: value %T for a %s column", f, f.Value, col.DataType())
		}
		var holds bool
		switch f.Op {
		case "=":
			holds = c == 0
		case "<":
			holds = c < 0
		case "<=":
			holds = c <= 0
		case ">":
			holds = c > 0
		case ">=":
			holds = c >= 0
		default:
			return false, fmt.Errorf("filter %+v: operator", f)
		}
		if !holds {
			return false, nil
		}
	}
	return true, nil
}

func compareRow(col arrow.Array, i int, v any) (int, bool) {
	switch a := col.(type) {
	case *array.Int8:
		x, ok := v.(int8)
		return cmpInt(int64(a.Value(i)), int64(x)), ok
	case *array.Int32:
		x, ok := v.(int32)
		return cmpInt(int64(a.Value(i)), int64(x)), ok
	case *array.Int64:
		x, ok := v.(int64)
		return cmpInt(a.Value(i), x), ok
	case *array.Uint16:
		x, ok := v.(uint16)
		return cmpInt(int64(a.Value(i)), int64(x)), ok
	case *array.Float32:
		x, ok := v.(float32)
		return cmpNaNLast(float64(a.Value(i)), float64(x)), ok
	case *array.Float64:
		x, ok := v.(float64)
		return cmpNaNLast(a.Value(i), x), ok
	case *array.Decimal128:
		x, ok := v.(decimal128.Num)
		return a.Value(i).Cmp(x), ok
	case *array.Date32:
		x, ok := v.(arrow.Date32)
		return cmpInt(int64(a.Value(i)), int64(x)), ok
	case *array.Time64:
		x, ok := v.(arrow.Time64)
		return cmpInt(int64(a.Value(i)), int64(x)), ok
	case *array.Timestamp:
		x, ok := v.(arrow.Timestamp)
		return cmpInt(int64(a.Value(i)), int64(x)), ok
	case *array.Boolean:
		x, ok := v.(bool)
		b2i := map[bool]int64{false: 0, true: 1}
		return cmpInt(b2i[a.Value(i)], b2i[x]), ok
	case *array.Binary:
		x, ok := v.([]byte)
		return bytes.Compare(a.Value(i), x), ok
	case *array.String:
		x, ok := v.(string)
		return strings.Compare(a.Value(i), x), ok
	}
	return 0, false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpNaNLast(a, b float64) int {
	switch an, bn := a != a, b != b; {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
