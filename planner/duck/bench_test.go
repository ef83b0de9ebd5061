package duck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const benchRows = 1_000_000

// benchRecord: id, kind (one of 10 strings), amount.
func benchRecord(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ids, kinds, amounts := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.StringBuilder), b.Field(2).(*array.Float64Builder)
	for i := range n {
		ids.Append(int64(i))
		kinds.Append(fmt.Sprintf("kind-%02d", i*7%10))
		amounts.Append(float64(i%1000) / 10)
	}
	return b.NewRecordBatch()
}

// benchEngines returns a locked engine over the Lakestream table "events"
// (3 parts of 64Ki-row batches) and an unlocked one holding the same rows
// in a native DuckDB table "native".
func benchEngines(b *testing.B) (lake, native *Engine) {
	rec := benchRecord(benchRows)
	defer rec.Release()
	r := newFakeResolver()
	ft := newFakeTable("default.events", rec, 3, 64*1024)
	b.Cleanup(ft.release)
	r.add(ft)
	lake, err := New(r, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lake.Close() })
	native, err = newEngine(r, Options{}, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { native.Close() })
	if err := execAll(native.db, "CREATE TABLE native AS SELECT * FROM events"); err != nil {
		b.Fatal(err)
	}
	return lake, native
}

// drain runs sql and counts the result rows.
func drain(b *testing.B, e *Engine, sql string) (rows, batches int, d time.Duration) {
	start := time.Now()
	s, _, err := e.Query(context.Background(), sql)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for {
		rec, err := s.Next()
		if errors.Is(err, io.EOF) {
			return rows, batches, time.Since(start)
		}
		if err != nil {
			b.Fatal(err)
		}
		rows += int(rec.NumRows())
		batches++
		rec.Release()
	}
}

// compare runs the query over both engines each iteration and reports the
// time of each and their ratio (lakestream / native).
func compare(b *testing.B, query string, wantRows int) {
	lake, native := benchEngines(b)
	var lakeT, nativeT time.Duration
	n := 0
	for b.Loop() {
		rows, _, d := drain(b, lake, fmt.Sprintf(query, "events"))
		lakeT += d
		if rows != wantRows {
			b.Fatalf("lakestream: %d rows, want %d", rows, wantRows)
		}
		rows, _, d = drain(b, native, fmt.Sprintf(query, "native"))
		nativeT += d
		if rows != wantRows {
			b.Fatalf("native: %d rows, want %d", rows, wantRows)
		}
		n++
	}
	b.ReportMetric(float64(lakeT.Microseconds())/1e3/float64(n), "lakestream-ms/op")
	b.ReportMetric(float64(nativeT.Microseconds())/1e3/float64(n), "native-ms/op")
	b.ReportMetric(float64(lakeT)/float64(nativeT), "ratio")
}

// BenchmarkGroupBy: GROUP BY over 1M rows scanned through the table
// function vs the same rows in a native DuckDB table.
func BenchmarkGroupBy(b *testing.B) {
	compare(b, "SELECT kind, count(*), sum(amount), avg(id) FROM %s GROUP BY kind", 10)
}

// BenchmarkSelect: the whole table through both the scan path and the
// result path (DuckDB chunks → Arrow records).
func BenchmarkSelect(b *testing.B) {
	compare(b, "SELECT id, kind, amount FROM %s", benchRows)
}

// BenchmarkQueryOverhead: the fixed cost of a tiny query, with and without
// the name analysis that a '.' in the text triggers (names.go), and with
// the parse for filter pushdown that a WHERE triggers (filters.go).
func BenchmarkQueryOverhead(b *testing.B) {
	e, err := New(newFakeResolver(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, sql := range []string{"SELECT 1", "SELECT x.a FROM (SELECT 1 AS a) x", "SELECT a FROM (SELECT 1 AS a) WHERE a = 1"} {
		b.Run(sql, func(b *testing.B) {
			for b.Loop() {
				if rows, _, _ := drain(b, e, sql); rows != 1 {
					b.Fatalf("%d rows", rows)
				}
			}
		})
	}
}
