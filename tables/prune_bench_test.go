package tables

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/internal/scan"
)

// Time-ordered events for the pruning benchmarks: 32 writes of 64Ki rows,
// 1 ms apart, one bucket: 32 batches of 64Ki rows, ~2M rows.
const (
	pruneBenchBatches = 32
	pruneBenchRows    = 64 * 1024
	pruneBenchStartTS = 1_700_000_000_000_000
)

// openPruneBench writes the benchmark table into a store in a temporary
// directory on the OS filesystem.
func openPruneBench(b *testing.B) *Table {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cat.Close() })
	st, err := Open(ctx, cat, Config{Dir: filepath.Join(dir, "tables")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	stmt, err := catalog.Parse("CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMP) WITH ('bucket.num'='1')")
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Exec(ctx, stmt); err != nil {
		b.Fatal(err)
	}
	tbl, err := st.Get(ctx, "", "ev")
	if err != nil {
		b.Fatal(err)
	}
	for i := range pruneBenchBatches {
		rec := benchEvents(memory.DefaultAllocator, pruneBenchRows, int64(i*pruneBenchRows), pruneBenchStartTS)
		c, err := tbl.Conform(rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		_, err = tbl.Write(ctx, c)
		c.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	return tbl
}

// countScan reads every part of a plan and counts the rows.
func countScan(b *testing.B, p scan.Plan) int {
	n := 0
	for _, part := range p.Parts() {
		rs, err := part.Open(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, err := rs.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += int(rec.NumRows())
			rec.Release()
		}
		rs.Close()
	}
	return n
}

// BenchmarkPrunedScan: a decoded scan of ~2M time-ordered rows for a
// 10-second range of ts (about 10k rows, in one or two of the 32 batches),
// with the range pushed down as filters and without; ratio is the time
// without over the time with.
func BenchmarkPrunedScan(b *testing.B) {
	tbl := openPruneBench(b)
	from := arrow.Timestamp(pruneBenchStartTS + 1_000_000_000) // 1000 s in
	to := from + arrow.Timestamp(10*time.Second/time.Microsecond)
	filters := []scan.Filter{{Column: 3, Op: ">=", Value: from}, {Column: 3, Op: "<", Value: to}}
	cols := []int{0, 1, 3}
	var with, without time.Duration
	for b.Loop() {
		start := time.Now()
		p, err := tbl.Plan(context.Background(), scan.Request{Columns: cols, Filters: filters})
		if err != nil {
			b.Fatal(err)
		}
		if n := countScan(b, p); n == 0 || n > 2*pruneBenchRows {
			b.Fatalf("pruned scan returned %d rows", n)
		}
		with += time.Since(start)
		start = time.Now()
		p, err = tbl.Plan(context.Background(), scan.Request{Columns: cols})
		if err != nil {
			b.Fatal(err)
		}
		if n := countScan(b, p); n != pruneBenchBatches*pruneBenchRows {
			b.Fatalf("full scan returned %d rows", n)
		}
		without += time.Since(start)
	}
	b.ReportMetric(float64(with.Microseconds())/1e3/float64(b.N), "pruned-ms/op")
	b.ReportMetric(float64(without.Microseconds())/1e3/float64(b.N), "full-ms/op")
	b.ReportMetric(float64(without)/float64(with), "ratio")
}
