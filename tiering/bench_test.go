package tiering

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// BenchmarkRound measures a tiering round of 200k fresh rows over 4
// buckets (bucket-partitioned lake): read and decode the log, write the
// Parquet files with their row maps, commit.
func BenchmarkRound(b *testing.B) {
	e := newLakeEnv(b, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR) WITH ('bucket.num'='4', 'bucket.key'='id')`)
	const rows = 200_000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.ingest("bars", i*rows, rows)
		b.StartTimer()
		e.round("bars")
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkHandOff measures a subscription's read of 1M rows from the lake
// (4 buckets, retention deleted the log's head): plan, footers, row
// groups, changelog records.
func BenchmarkHandOff(b *testing.B) {
	e := newLakeEnv(b, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('bucket.num'='4', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl := e.table("bars")
	const rows = 1 << 20
	for i := 0; i < 8; i++ {
		e.ingest("bars", i*rows/8, rows/8)
	}
	e.round("bars")
	e.ingest("bars", rows, 100)
	deleteTieredSegments(b, e, tbl)
	tiered := tbl.Tiered()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var n int64
		for bk, end := range tiered {
			ctx, cancel := context.WithCancel(context.Background())
			out := make(chan arrow.RecordBatch, 4)
			done := make(chan int64)
			go func() {
				var got int64
				for got < end {
					rec := <-out
					got += rec.NumRows()
					rec.Release()
				}
				cancel()
				done <- got
			}()
			_ = tbl.Follow(ctx, bk, 0, []int{0, 1, 3, 4, 5}, out)
			n += <-done
		}
		if n < rows {
			b.Fatalf("read %d rows", n)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkPKRound measures a tiering round of a primary-key table over 4
// buckets fed a 50%-update stream: 200k upserts a round, half of keys the
// lake holds (each a -U/+U pair and a position delete of the old row),
// half new; rows/s counts the upserts, as BenchmarkRound counts its rows.
func BenchmarkPKRound(b *testing.B) {
	e := newLakeEnv(b, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num'='4')`)
	const rows = 200_000
	e.ingest("kv", 0, rows/2)
	e.round("kv")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.ingest("kv", i*rows/2, rows)
		b.StartTimer()
		e.round("kv")
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
