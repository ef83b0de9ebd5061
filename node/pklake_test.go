package node

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// A plain scan of a tiered primary-key table is served under one state
// captured at DoGet: a key updated, deleted or inserted between
// GetFlightInfo and DoGet (and a round in between) is read exactly once,
// as of DoGet, however its rows split between the lake and the log. The
// engine's SELECT and count(*) agree.
func TestPlainScanOfTieredPKTableIsOneState(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTP: "off", Tiering: TieringManual, Logger: slog.New(slog.DiscardHandler)}
	n, stop, done := startNodeWith(t, cfg)
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		if _, err := cl.ExecuteUpdate(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE kv (id BIGINT NOT NULL, v BIGINT, PRIMARY KEY (id)) WITH ('bucket.num'='2')`)
	tbl, err := n.Tables().Get(ctx, "", "kv")
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		t.Helper()
		if _, err := n.Lake().Round(ctx, tbl.Def().ID); err != nil {
			t.Fatal(err)
		}
	}
	exec("INSERT INTO kv SELECT range, 0 FROM range(1000)")
	round()
	exec("INSERT INTO kv SELECT range, 1 FROM range(500)") // updates in the log
	info, err := cl.Execute(ctx, "SELECT * FROM kv")
	if err != nil {
		t.Fatal(err)
	}
	// Between the plan and the read: an update of a key whose older rows
	// are in the lake and the log, a delete, new keys, and a round.
	exec("INSERT INTO kv VALUES (7, 2), (1000, 3), (1001, 3)")
	exec("DELETE FROM kv WHERE id = 8")
	round()
	exec("INSERT INTO kv VALUES (9, 4)")
	want := map[int64]int64{}
	for id := int64(0); id < 1000; id++ {
		want[id] = 0
		if id < 500 {
			want[id] = 1
		}
	}
	want[7], want[9], want[1000], want[1001] = 2, 4, 3, 3
	delete(want, 8)
	got := map[int64]int64{}
	for _, ep := range info.Endpoint {
		if !strings.Contains(string(ep.Ticket.Ticket), `"state":true`) {
			t.Fatalf("ticket of a tiered primary-key table: %s, want a state ticket", ep.Ticket.Ticket)
		}
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			ids, vs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				if _, dup := got[ids.Value(i)]; dup {
					t.Fatalf("key %d read twice", ids.Value(i))
				}
				got[ids.Value(i)] = vs.Value(i)
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
	if len(got) != len(want) {
		t.Fatalf("read %d keys, want %d", len(got), len(want))
	}
	var sum int64
	for id, v := range want {
		sum += v
		if got[id] != v {
			t.Fatalf("key %d: v %d, want %d", id, got[id], v)
		}
	}
	if c := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM kv"); c != int64(len(want)) {
		t.Fatalf("count(*) %d, want %d", c, len(want))
	}
	if s := queryInt64(t, cl, "SELECT sum(v)::BIGINT FROM kv"); s != sum {
		t.Fatalf("sum(v) %d, want %d", s, sum)
	}
	if s := queryInt64(t, cl, "SELECT v FROM kv WHERE id = 7"); s != 2 {
		t.Fatalf("SELECT v WHERE id = 7: %d, want 2", s)
	}
}
