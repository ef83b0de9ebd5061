package tables_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables"
)

// BenchmarkIdempotentWrite is the cost of the writer headers: the same
// 4,096-row calls to a 4-bucket table, without and with a writer (and as
// retries, which store nothing). Without fsyncs (SyncNever), so that the
// difference is not lost in their latency.
func BenchmarkIdempotentWrite(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	st, err := tables.Open(ctx, cat, tables.Config{Dir: filepath.Join(dir, "tables"), Log: columnarlog.Options{Sync: columnarlog.SyncNever}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	stmt, _ := catalog.Parse(`CREATE TABLE ev ` + eventsCols + ` WITH ('bucket.num' = '4')`)
	if err := st.Exec(ctx, stmt); err != nil {
		b.Fatal(err)
	}
	tbl, err := st.Get(ctx, "", "ev")
	if err != nil {
		b.Fatal(err)
	}
	rec := events(b, memory.DefaultAllocator, 0, 4096)
	defer rec.Release()
	var seq int32
	for _, c := range []struct {
		name   string
		writer func() tables.Writer
	}{
		{"plain", func() tables.Writer { return tables.Writer{} }},
		{"writer", func() tables.Writer { seq++; return tables.Writer{ID: 1, Seq: seq} }},
		{"retry", func() tables.Writer { return tables.Writer{ID: 1, Seq: seq} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				a := tbl.NewAppender()
				if w := c.writer(); w.ID != 0 {
					a.SetWriter(w)
				}
				if err := a.Add(ctx, rec); err != nil {
					b.Fatal(err)
				}
				if err := a.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*4096)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
