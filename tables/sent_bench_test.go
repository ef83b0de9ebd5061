package tables_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables"
)

// BenchmarkWriteSent is what storing compressed input as sent saves: the
// same 16,384-row record written to a one-bucket lz4 table encoded by the
// node (Add) or as the LZ4 message a client sent (AddSent), and to a
// 4-bucket table whose key puts every row of the record in one bucket
// (Add: kept whole, as bucket.Split keeps it) against one that spreads them
// (Add: split in four; the rows hold 3 kinds and nulls). Without fsyncs (SyncNever); the figure is the process's CPU
// per million rows (docs/benchmarks.md):
//
//	go test -run '^$' -bench BenchmarkWriteSent -benchtime 200x ./tables/
func BenchmarkWriteSent(b *testing.B) {
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
	for _, ddl := range []string{
		`CREATE TABLE one ` + eventsCols + ` WITH ('bucket.num'='1', 'log.compression'='lz4')`,
		`CREATE TABLE four ` + eventsCols + ` WITH ('bucket.num'='4', 'bucket.key'='kind', 'log.compression'='lz4')`,
	} {
		stmt, _ := catalog.Parse(ddl)
		if err := st.Exec(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	const rows = 16384
	rec := events(b, memory.DefaultAllocator, 0, rows)
	defer rec.Release()
	meta, body := compressedMessage(b, rec, ipc.WithLZ4())
	same := oneKind(b, rows) // every row in the same bucket of "four"
	defer same.Release()
	for _, c := range []struct {
		name, table string
		add         func(a *tables.Appender) error
	}{
		{"one bucket/encoded", "one", func(a *tables.Appender) error { return a.Add(ctx, rec) }},
		{"one bucket/as sent", "one", func(a *tables.Appender) error {
			return a.AddSent(ctx, rec, tables.Sent{Meta: meta, Body: body})
		}},
		{"four buckets/split", "four", func(a *tables.Appender) error { return a.Add(ctx, rec) }},
		{"four buckets/one bucket", "four", func(a *tables.Appender) error { return a.Add(ctx, same) }},
	} {
		tbl, err := st.Get(ctx, "", c.table)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			before := cpuNow(b)
			for b.Loop() {
				a := tbl.NewAppender()
				if err := c.add(a); err != nil {
					b.Fatal(err)
				}
				if err := a.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuNow(b)-before)/float64(b.N)/rows*1e6, "CPU-s/Mrows")
		})
	}
}

// oneKind is n event rows of one kind.
func oneKind(b *testing.B, n int) arrow.RecordBatch {
	ids, amounts, kinds, tss := make([]any, n), make([]any, n), make([]any, n), make([]any, n)
	for i := range n {
		ids[i], amounts[i], kinds[i], tss[i] = i, float64(i)/4, "click", 1_700_000_000_000_000+i*1000
	}
	return record(b, memory.DefaultAllocator, i64("id", false, ids...), f64("amount", amounts...), str("kind", kinds...), tsUS("ts", tss...))
}

// cpuNow is the process's CPU time, user and system, in seconds.
func cpuNow(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
