package tiering

import (
	"testing"
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
