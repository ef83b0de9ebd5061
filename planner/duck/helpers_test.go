package duck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// newTestEngine starts an engine over res, closed at the end of the test.
func newTestEngine(t testing.TB, res scan.Resolver) *Engine {
	t.Helper()
	e, err := New(res, Options{Threads: 2})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// checkedAlloc returns an allocator that fails the test if anything built
// with it is still allocated when the test (and the engine) is done.
func checkedAlloc(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// addTable registers a fake table over rec, split into 3 parts of batches
// of at most batch rows, released at the end of the test.
func addTable(t *testing.T, r *fakeResolver, name string, rec arrow.RecordBatch, batch int) *fakeTable {
	ft := newFakeTable(name, rec, 3, batch)
	r.add(ft)
	t.Cleanup(ft.release)
	return ft
}

var testEpoch = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// eventsRecord builds n rows: id, kind (a/b/c), amount (null every 10th),
// ts (one hour apart, UTC).
func eventsRecord(mem memory.Allocator, n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(string(rune('a' + i%3)))
		if i%10 == 9 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) * 1.5)
		}
		ts, _ := arrow.TimestampFromTime(testEpoch.Add(time.Duration(i)*time.Hour), arrow.Microsecond)
		b.Field(3).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}

// withEvents registers default.events (30 rows) and returns the engine.
func withEvents(t *testing.T) (*Engine, *fakeResolver, *fakeTable) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	rec := eventsRecord(mem, 30)
	defer rec.Release()
	ft := addTable(t, r, "default.events", rec, 4)
	return newTestEngine(t, r), r, ft
}

// result is a query result as strings, one slice per row.
type result struct {
	schema  *arrow.Schema
	rows    [][]string
	batches int
}

// query runs sql and reads the whole result.
func query(t *testing.T, e *Engine, sql string, args ...any) result {
	t.Helper()
	res, err := tryQuery(e, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

func tryQuery(e *Engine, sql string, args ...any) (result, error) {
	s, schema, err := e.Query(context.Background(), sql, args...)
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	res := result{schema: schema}
	for {
		rec, err := s.Next()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return result{}, err
		}
		if !rec.Schema().Equal(schema) {
			rec.Release()
			return result{}, fmt.Errorf("record schema %s, want %s", rec.Schema(), schema)
		}
		res.batches++
		res.rows = append(res.rows, rowStrings(rec)...)
		rec.Release()
	}
}

func rowStrings(rec arrow.RecordBatch) [][]string {
	rows := make([][]string, rec.NumRows())
	for i := range rows {
		row := make([]string, rec.NumCols())
		for j, col := range rec.Columns() {
			// Clone: string values alias the record's buffers.
			row[j] = strings.Clone(col.ValueStr(i))
		}
		rows[i] = row
	}
	return rows
}

func (r result) String() string {
	var b strings.Builder
	for _, row := range r.rows {
		b.WriteString(strings.Join(row, "|"))
		b.WriteByte('\n')
	}
	return b.String()
}

// wantRows fails unless the result has exactly the given rows, in order.
func wantRows(t *testing.T, got result, want ...string) {
	t.Helper()
	w := strings.Join(want, "\n")
	if len(want) > 0 {
		w += "\n"
	}
	if g := got.String(); g != w {
		t.Errorf("rows:\n%s\nwant:\n%s", g, w)
	}
}
