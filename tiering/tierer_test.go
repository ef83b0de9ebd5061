package tiering

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lakestream/lakestream/catalog"
)

const createBars = `CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
	WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1h')`

func TestRoundTiersCommittedRowsWithOffsets(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(createBars)
	e.ingest("bars", 0, 1000)
	if got := e.totals("bars"); got != want(1000) {
		t.Fatalf("before tiering: %v, want %v", got, want(1000))
	}
	res := e.round("bars")
	if res.Rows != 1000 {
		t.Fatalf("round tiered %d rows, want 1000", res.Rows)
	}
	if got := e.totals("bars$lake"); got != want(1000) {
		t.Fatalf("lake after round: %v, want %v", got, want(1000))
	}
	if got := e.totals("bars"); got != want(1000) {
		t.Fatalf("union after round: %v, want %v", got, want(1000))
	}
	e.ingest("bars", 1000, 500)
	if got := e.totals("bars"); got != want(1500) {
		t.Fatalf("union with a tail: %v, want %v", got, want(1500))
	}
	st := e.svc.lookup(e.table("bars").Def().ID).state.Load()
	if p, s := st.tbl.Properties()[offsetsKey], st.tbl.CurrentSnapshot().Summary.Properties[offsetsKey]; p != s || p != formatOffsets(res.To) {
		t.Fatalf("offsets: property %q, summary %q, round %q", p, s, formatOffsets(res.To))
	}
	var sum int64
	for _, o := range res.To {
		sum += o
	}
	if sum != 1000 {
		t.Fatalf("tiered offsets %v sum to %d, want 1000", res.To, sum)
	}
	// Nothing new: a round commits nothing.
	snaps := len(st.tbl.Metadata().Snapshots())
	e.round("bars")
	e.round("bars")
	if got := e.totals("bars$lake"); got != want(1500) {
		t.Fatalf("lake after second round: %v", got)
	}
	e.round("bars")
	if n := len(e.svc.lookup(e.table("bars").Def().ID).state.Load().tbl.Metadata().Snapshots()); n != snaps+1 {
		t.Fatalf("%d snapshots after rounds with nothing new, want %d", n, snaps+1)
	}
}

// errCrash stands for the process dying at a fault point.
var errCrash = errors.New("crash")

func TestRoundCrashIsExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults faults
	}{
		{"files written, not committed", faults{beforeCommit: func() error { return errCrash }}},
		{"committed, nothing recorded", faults{afterCommit: func() error { return errCrash }}},
		{"middle of a multi-bucket round", faults{midRound: func(b int) error {
			if b == 1 {
				return errCrash
			}
			return nil
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLakeEnv(t, Config{faults: tc.faults})
			e.exec(createBars)
			e.ingest("bars", 0, 3000)
			id := e.table("bars").Def().ID
			if _, err := e.svc.Round(context.Background(), id); !errors.Is(err, errCrash) {
				t.Fatalf("round with a fault: %v, want the crash", err)
			}
			e.restart(Config{})
			if got := e.totals("bars"); got != want(3000) {
				t.Fatalf("union after restart: %v, want %v", got, want(3000))
			}
			e.ingest("bars", 3000, 1000)
			e.round("bars")
			if got := e.totals("bars$lake"); got != want(4000) {
				t.Fatalf("lake after recovery round: %v, want %v", got, want(4000))
			}
			if got := e.totals("bars"); got != want(4000) {
				t.Fatalf("union after recovery round: %v, want %v", got, want(4000))
			}
		})
	}
}

func TestRoundBoundedByMaxRoundRows(t *testing.T) {
	e := newLakeEnv(t, Config{MaxRoundRows: 300})
	e.exec(createBars)
	for i := 0; i < 10; i++ {
		e.ingest("bars", i*100, 100)
	}
	rounds := 0
	for {
		res := e.round("bars")
		rounds++
		if got := e.totals("bars"); got != want(1000) {
			t.Fatalf("union after round %d: %v", rounds, got)
		}
		if !res.Truncated {
			break
		}
		if rounds > 50 {
			t.Fatal("rounds never finish")
		}
	}
	if rounds < 3 {
		t.Fatalf("%d rounds for 1000 rows at 300 per round", rounds)
	}
	if got := e.totals("bars$lake"); got != want(1000) {
		t.Fatalf("lake: %v", got)
	}
}

// Retention deletes log segments only below the tiered offset; the rows
// they held are read from the lake, and the log keeps what is not tiered.
func TestRetentionKeepsUntieredAndLakeServesTheRest(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('bucket.num'='2', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1s', 'log.compression'='none')`)
	// About 16 bytes a row uncompressed: 200k rows roll several segments.
	for i := 0; i < 4; i++ {
		e.ingest("bars", i*50_000, 50_000)
	}
	tbl := e.table("bars")
	startOf := func() (n int64) {
		for b := 0; b < tbl.Log().Buckets(); b++ {
			n += tbl.Log().Bucket(b).Stats().Start
		}
		return n
	}
	// Nothing tiered: retention deletes nothing, however old. (Retention
	// is by age: the segments must be older than log.retention.)
	time.Sleep(1200 * time.Millisecond)
	if _, err := e.store.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if s := startOf(); s != 0 {
		t.Fatalf("retention deleted untiered segments: log starts sum to %d", s)
	}
	e.round("bars")
	e.ingest("bars", 200_000, 1000) // a tail that stays in the log
	deadline := time.Now().Add(30 * time.Second)
	for startOf() == 0 {
		if _, err := e.store.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("retention deleted no tiered segment in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for b, o := range tbl.Tiered() {
		if s := tbl.Log().Bucket(b).Stats().Start; s > o {
			t.Fatalf("bucket %d: log starts at %d, above the tiered offset %d", b, s, o)
		}
	}
	if got := e.totals("bars"); got != want(201_000) {
		t.Fatalf("union after retention: %v, want %v", got, want(201_000))
	}
}

// DROP TABLE drops the Iceberg table, DROP DATABASE its namespace; a table
// created with datalake.keep-on-drop keeps its Iceberg table, and a new
// table of the same name is refused until that one is gone.
func TestDropDropsOrKeepsTheLake(t *testing.T) {
	e := newLakeEnv(t, Config{})
	ctx := context.Background()
	e.exec("CREATE DATABASE shop")
	e.exec("CREATE TABLE shop.a (id BIGINT NOT NULL, amount DOUBLE)")
	e.exec("CREATE TABLE shop.b (id BIGINT NOT NULL, amount DOUBLE) WITH ('datalake.keep-on-drop'='true')")
	e.exec("DROP TABLE shop.a")
	if ok, _ := e.ice.CheckTableExists(ctx, []string{"shop", "a"}); ok {
		t.Fatal("DROP TABLE left the Iceberg table")
	}
	e.exec("DROP TABLE shop.b")
	if ok, _ := e.ice.CheckTableExists(ctx, []string{"shop", "b"}); !ok {
		t.Fatal("keep-on-drop did not keep the Iceberg table")
	}
	stmt, err := catalog.Parse("CREATE TABLE shop.b (id BIGINT NOT NULL, amount DOUBLE)")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "keep-on-drop") {
		t.Fatalf("CREATE over a kept lake table: %v", err)
	}
	if _, err := e.store.Get(ctx, "shop", "b"); err == nil {
		t.Fatal("the refused CREATE left a table behind")
	}
	e.exec("CREATE DATABASE web")
	e.exec("CREATE TABLE web.c (id BIGINT NOT NULL, amount DOUBLE)")
	e.exec("DROP DATABASE web CASCADE")
	if ok, _ := e.ice.CheckNamespaceExists(ctx, []string{"web"}); ok {
		t.Fatal("DROP DATABASE left the Iceberg namespace")
	}
}
