package tiering

import (
	"testing"
)

// A primary-key table has a lake side like a log table: an Iceberg table
// at creation, rounds at every start, and reads of one row per key before
// and after its rounds, while a log table beside it tiers as usual.
func TestPrimaryKeyTableIsTiered(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
		WITH ('bucket.num'='2', 'datalake.freshness'='1h')`)
	e.exec(createBars)
	e.ingest("kv", 0, 100)
	e.ingest("kv", 0, 100) // every key again: updates
	e.ingest("bars", 0, 100)
	for round := 0; round < 2; round++ {
		if lt := e.svc.lookup(e.table("kv").Def().ID); lt == nil || lt.state.Load().pk == nil {
			t.Fatalf("start %d: the primary-key table has no lake table with its state", round)
		}
		if got := e.totals("kv"); got != want(100) {
			t.Fatalf("start %d: the primary-key table reads %v, want %v (one row per key)", round, got, want(100))
		}
		res := e.round("kv")
		if round == 0 && res.Rows != 300 { // +I 100, then -U/+U 200
			t.Fatalf("the primary-key table's round tiered %d rows, want 300", res.Rows)
		}
		if got := e.totals("kv"); got != want(100) {
			t.Fatalf("start %d: after its round the primary-key table reads %v, want %v", round, got, want(100))
		}
		if res := e.round("bars"); round == 0 && res.Rows != 100 {
			t.Fatalf("the log table's round tiered %d rows, want 100", res.Rows)
		}
		e.restart(Config{})
	}
}
