package tiering

import (
	"context"
	"errors"
	"testing"
)

// A primary-key table has no lake side yet: its log holds its changelog,
// which would put each key into the lake once per change. It gets no
// Iceberg table and no rounds, at creation and at every start, while a log
// table beside it tiers as usual.
func TestPrimaryKeyTableIsNotTiered(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
		WITH ('bucket.num'='2', 'datalake.freshness'='1h')`)
	e.exec(createBars)
	e.ingest("kv", 0, 100)
	e.ingest("kv", 0, 100) // every key again: updates
	e.ingest("bars", 0, 100)
	for round := 0; round < 2; round++ {
		if lt := e.svc.lookup(e.table("kv").Def().ID); lt != nil {
			t.Fatalf("start %d: the primary-key table has a lake table", round)
		}
		if _, err := e.svc.Round(context.Background(), e.table("kv").Def().ID); !errors.Is(err, errDropped) {
			t.Fatalf("start %d: a round of the primary-key table: %v, want no lake side", round, err)
		}
		if got := e.totals("kv"); got != want(100) {
			t.Fatalf("start %d: the primary-key table reads %v, want %v (one row per key)", round, got, want(100))
		}
		if res := e.round("bars"); round == 0 && res.Rows != 100 {
			t.Fatalf("the log table's round tiered %d rows, want 100", res.Rows)
		}
		e.restart(Config{})
	}
}
