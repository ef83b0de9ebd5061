package tiering

import (
	"context"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// A read captured before a round committed still returns every row of its
// capture after retention deleted what that round tiered: the part of its
// log ranges the log no longer holds comes from the lake, with the same
// offsets. Without that, such a read failed with "offset out of range"
// when retention ran while it was planned or read.
func TestCapturedReadSurvivesRetention(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('bucket.num'='2', 'bucket.key'='id', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl := e.table("bars")
	e.ingest("bars", 0, 100_000)
	e.round("bars")
	e.ingest("bars", 100_000, 100_000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	union, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil {
		t.Fatal(err)
	}
	changelog, err := tbl.Capture(ctx, tables.LayerChangelog)
	if err != nil {
		t.Fatal(err)
	}
	e.round("bars")                    // tiers the log ranges union captured
	e.ingest("bars", 200_000, 100_000) // rolls the segments they are in
	deadline := time.Now().Add(30 * time.Second)
	for !retentionPassed(tbl, union.Ranges) {
		if _, err := e.store.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("retention deleted no segment of the captured ranges in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for name, v := range map[string]*tables.View{"union": union, "changelog": changelog} {
		p, err := v.Plan(ctx, scan.Request{Columns: []int{0}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := planTotals(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want(200_000) {
			t.Fatalf("%s read after retention: %v, want %v", name, got, want(200_000))
		}
	}
}

// retentionPassed reports whether every range's bucket log now starts
// above the range's start.
func retentionPassed(tbl *tables.Table, ranges []tables.Range) bool {
	for _, r := range ranges {
		if tbl.Log().Bucket(r.Bucket).Stats().Start <= r.From {
			return false
		}
	}
	return true
}
