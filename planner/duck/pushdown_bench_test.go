package duck_test

// An end-to-end benchmark of filter pushdown: DuckDB over the real log
// (package tables), which the engine itself never imports — it sees only
// scan.Resolver. It lives in the external test package for that reason.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
)

const (
	benchBatches = 32
	benchBatch   = 64 * 1024
)

var benchStart = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// openEvents writes ~2M time-ordered event rows (1 ms apart) in 32 writes
// of 64Ki rows into one bucket, so the log holds 32 batches each covering
// about 65 seconds of ts.
func openEvents(b *testing.B) *tables.Store {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cat.Close() })
	st, err := tables.Open(ctx, cat, tables.Config{Dir: filepath.Join(dir, "tables")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	stmt, err := catalog.Parse("CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) WITH ('bucket.num'='1')")
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Exec(ctx, stmt); err != nil {
		b.Fatal(err)
	}
	tbl, err := st.Get(ctx, "", "events")
	if err != nil {
		b.Fatal(err)
	}
	schema := tbl.Schema()
	rng := rand.New(rand.NewPCG(1, 2))
	for w := range benchBatches {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range benchBatch {
			id := int64(w*benchBatch + i)
			rb.Field(0).(*array.Int64Builder).Append(id)
			rb.Field(1).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
			rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("kind-%02d", rng.IntN(12)))
			rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(benchStart.UnixMicro() + id*1000))
		}
		rec := rb.NewRecordBatch()
		rb.Release()
		_, err := tbl.Write(ctx, rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	return st
}

func runCount(b *testing.B, e *duck.Engine, sql string) (string, time.Duration) {
	start := time.Now()
	s, _, err := e.Query(context.Background(), sql)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var out string
	for {
		rec, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, time.Since(start)
		}
		if err != nil {
			b.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			for _, c := range rec.Columns() {
				out += c.ValueStr(i) + "|"
			}
		}
		rec.Release()
	}
}

// BenchmarkTimeRangePushdown: a selective WHERE on a 10-second range of ts
// (10,000 of ~2.1M rows, in one of 32 batches) through DuckDB over the log,
// with the range pushed into the scan (batches pruned by their statistics)
// and without; ratio is the time without over the time with.
func BenchmarkTimeRangePushdown(b *testing.B) {
	st := openEvents(b)
	on, err := duck.New(st, duck.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer on.Close()
	off, err := duck.New(st, duck.Options{NoFilterPushdown: true})
	if err != nil {
		b.Fatal(err)
	}
	defer off.Close()
	from := benchStart.Add(1000 * time.Second)
	sql := fmt.Sprintf(`SELECT count(*), sum(amount) FROM events
		WHERE ts >= TIMESTAMPTZ '%s' AND ts < TIMESTAMPTZ '%s'`,
		from.Format("2006-01-02 15:04:05Z"), from.Add(10*time.Second).Format("2006-01-02 15:04:05Z"))
	var with, without time.Duration
	for b.Loop() {
		got, d := runCount(b, on, sql)
		with += d
		want, d := runCount(b, off, sql)
		without += d
		if got != want || got[:6] != "10000|" {
			b.Fatalf("with pushdown %q, without %q", got, want)
		}
	}
	b.ReportMetric(float64(with.Microseconds())/1e3/float64(b.N), "pushdown-ms/op")
	b.ReportMetric(float64(without.Microseconds())/1e3/float64(b.N), "nopushdown-ms/op")
	b.ReportMetric(float64(without)/float64(with), "ratio")
}
