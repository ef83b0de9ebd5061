package tiering

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/columnarlog"
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

// Retention may also delete the segment after the one a read is in: the
// read goes on from the lake where the log stopped, sending no row twice.
func TestReadRangeContinuesInTheLakeMidRead(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	tbl := e.table("bars")
	for i := range 4 {
		e.ingest("bars", i*100_000, 100_000) // a batch, and a segment, each
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := tbl.Capture(ctx, tables.LayerChangelog)
	if err != nil || len(v.Ranges) != 1 {
		t.Fatalf("capture: %+v, %v", v, err)
	}
	r := v.Ranges[0]
	seen := map[int64]int{}
	count := func(rec arrow.RecordBatch) {
		ids := rec.Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			seen[ids.Value(i)]++
		}
	}
	first := true
	err = tbl.ReadRange(ctx, r, []int{0}, func(rec arrow.RecordBatch) error {
		count(rec)
		return nil
	}, func(b columnarlog.Batch) error {
		rec, err := tbl.DecodeBatch(b, []int{0})
		if err != nil {
			return err
		}
		count(rec)
		rec.Release()
		if first { // tier everything and let retention delete what the read has not reached
			first = false
			e.round("bars")
			e.ingest("bars", 400_000, 1) // seals the last segment
			for tbl.Log().Bucket(0).Stats().Start <= b.NextOffset() {
				if _, err := e.store.ApplyRetention(); err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(0); id < 400_000; id++ {
		if seen[id] != 1 {
			t.Fatalf("id %d read %d times (%d ids read)", id, seen[id], len(seen))
		}
	}
	if len(seen) != 400_000 {
		t.Fatalf("%d ids read, want the 400,000 of the capture", len(seen))
	}
}
