package flightsrv_test

import (
	"testing"
)

// BenchmarkQueryPlan is GetFlightInfo of engine queries over a 4-bucket
// table: a split filtered projection (RowWiseScan's parse, the capture,
// four sealed tickets) against an aggregate (one pinned ticket), and a
// plain scan, which the engine does not plan. docs/benchmarks.md has the
// figures.
func BenchmarkQueryPlan(b *testing.B) {
	ts := startEngineServer(b)
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(b, 0, 10_000))
	for _, c := range []struct{ name, sql string }{
		{"split", "SELECT id, amount * 2 FROM ev WHERE kind = 'buy'"},
		{"aggregate", "SELECT kind, count(*) FROM ev GROUP BY kind"},
		{"plain scan", "SELECT id, kind FROM ev"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				ts.mustExec(c.sql)
			}
		})
	}
}
