package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	e, tbl := newOneSegmentBars(t, 4)
	const n = segmentRows
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := tbl.Capture(ctx, tables.LayerChangelog)
	if err != nil || len(v.Ranges) != 1 {
		t.Fatalf("capture: %+v, %v", v, err)
	}
	r := v.Ranges[0]
	seen := idCounts{}
	first := true
	err = tbl.ReadRange(ctx, r, []int{0}, seen.add, func(b columnarlog.Batch) error {
		if err := seen.addBatch(tbl, b); err != nil {
			return err
		}
		if first { // tier everything and let retention delete what the read has not reached
			first = false
			e.round("bars")
			e.ingest("bars", 4*n, 1) // seals the last segment
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
	seen.check(t, 4*n)
}

// idCounts counts the ids (column 0) a read sends: records from the lake's
// history, stored batches from the log.
type idCounts map[int64]int

func (c idCounts) add(rec arrow.RecordBatch) error {
	ids := rec.Column(0).(*array.Int64)
	for i := 0; i < ids.Len(); i++ {
		c[ids.Value(i)]++
	}
	return nil
}

func (c idCounts) addBatch(tbl *tables.Table, b columnarlog.Batch) error {
	rec, err := tbl.DecodeBatch(b, []int{0})
	if err != nil {
		return err
	}
	defer rec.Release()
	return c.add(rec)
}

// check fails the test unless the ids read are [0, n), each once.
func (c idCounts) check(t testing.TB, n int64) {
	t.Helper()
	for id := int64(0); id < n; id++ {
		if c[id] != 1 {
			t.Fatalf("id %d read %d times (%d ids read)", id, c[id], len(c))
		}
	}
	if int64(len(c)) != n {
		t.Fatalf("%d ids read, want the %d of the capture", len(c), n)
	}
}

// Rounds and retention may overtake a read more than once: the history
// the read went to ends at the lake's tiered offset of that moment, and
// by the time the read is back in the log, another round and retention
// may have deleted the log from there too. The read then goes back to the
// lake's history, as often as it is overtaken, every row sent once.
// Without that, it failed with "read from offset A: log holds [B, ...):
// offset out of range" (TestPKUnionReadDuringRounds, once in about 30
// runs).
func TestReadRangeOvertakenTwice(t *testing.T) {
	e, tbl := newOneSegmentBars(t, 1)
	const n = segmentRows
	e.round("bars")
	e.ingest("bars", n, n)
	e.ingest("bars", 2*n, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := tbl.Capture(ctx, tables.LayerChangelog)
	if err != nil || len(v.Ranges) != 1 || v.Ranges[0].From != 0 {
		t.Fatalf("capture: %+v, %v", v, err)
	}
	retainPast(t, e, tbl, 0, 0) // the read starts in the history: [0, n) from the lake
	seen := idCounts{}
	first := true
	err = tbl.ReadRange(ctx, v.Ranges[0], []int{0}, func(rec arrow.RecordBatch) error {
		if first { // the log from n, where the history ends, goes too
			first = false
			e.round("bars")
			e.ingest("bars", 3*n, 1) // seals the last segment
			retainPast(t, e, tbl, 0, n)
		}
		return seen.add(rec)
	}, func(b columnarlog.Batch) error { return seen.addBatch(tbl, b) })
	if err != nil {
		t.Fatal(err)
	}
	seen.check(t, 3*n)
}

// The same for a primary-key table's state (the read of its live rows):
// a reader that planned against the lake's tiered offset A reads [A, B)
// from the history once retention deleted it, and then, the log having
// moved past B meanwhile, [B, E) from the history again.
func TestPKReadRangeOvertakenTwice(t *testing.T) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE kv (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, PRIMARY KEY (id))
		WITH ('bucket.num'='1', 'merge-engine'='aggregation', 'log.segment.bytes'='1MiB',
		'log.retention'='1ms', 'log.compression'='none', 'datalake.freshness'='1h')`)
	tbl := e.table("kv")
	const keys = 5000 // with kind's 256 bytes, a write of them all fills a segment
	all := make([]int64, keys)
	for i := range all {
		all[i] = int64(i)
	}
	model := map[int64]pkRow{}
	write := func(ids []int64, v float64) {
		kind := fmt.Sprintf("%0256g", v)
		upsertKV(t, tbl, model, ids, func(int64) *float64 { return ptr(v) }, func(int64) *string { return &kind })
	}
	write(all, 0)
	e.round("kv")
	write(all, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := tbl.Capture(ctx, tables.LayerTable)
	if err != nil || len(v.Ranges) != 1 {
		t.Fatalf("capture: %+v, %v", v, err)
	}
	r := v.Ranges[0] // [A, ...), A the lake's tiered offset
	e.round("kv")    // the lake to B
	// The lower half of the keys again, twice: the upper half stays live
	// in [A, B), and the segment holding it is sealed.
	write(all[:keys/2], 2)
	write(all[:keys/2], 3)
	retainPast(t, e, tbl, 0, r.From)
	b := tbl.Tiered()[0]
	want := maps.Clone(model) // ReadRange reads the state as of its call
	got := map[int64]pkRow{}
	first := true
	err = tbl.ReadRange(ctx, r, nil, func(rec arrow.RecordBatch) error {
		if first { // [A, B) comes from the history: the log moves past B
			first = false
			e.round("kv")
			write(all, 4)
			retainPast(t, e, tbl, 0, b)
		}
		rec.Retain()
		one, err := readKV(ctx, scan.NewPlan(rec.Schema(), []scan.Part{recPart{rec}}))
		for id, row := range one {
			if _, dup := got[id]; dup {
				return fmt.Errorf("key %d read twice", id)
			}
			got[id] = row
		}
		return err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := diffKV(got, want); err != nil {
		t.Fatal(err)
	}
}

// retainPast applies retention until bucket's log starts above off, the
// segments below the lake's tiered offset being old enough to go at once
// (log.retention 1ms).
func retainPast(t testing.TB, e *lakeEnv, tbl *tables.Table, bucket int, off int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for tbl.Log().Bucket(bucket).Stats().Start <= off {
		if _, err := e.store.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket %d: retention left the log starting at %d, at or below %d, for 30 s", bucket, tbl.Log().Bucket(bucket).Stats().Start, off)
		}
	}
}

// A subscriber slower than retention: while it holds a record, a round
// tiers what it has not read and retention deletes it from the log. The
// subscription goes on from the lake's history where it got to, then the
// log again, every offset once. Without that it ended with "read at offset
// N: the log now starts at M: offset out of range".
func TestFollowOvertakenByRetention(t *testing.T) {
	e, tbl := newOneSegmentBars(t, 3)
	const n = segmentRows
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(chan arrow.RecordBatch) // the reader waits on each record
	errc := make(chan error, 1)
	go func() { errc <- tbl.Follow(ctx, 0, 0, []int{0}, out) }()
	seen := idCounts{}
	for first := true; len(seen) < 4*n; first = false {
		select {
		case rec := <-out:
			seen.add(rec)
			rec.Release()
		case err := <-errc:
			t.Fatalf("follow ended after %d rows: %v", len(seen), err)
		}
		if first { // the reader is in its first segment: the others go
			e.round("bars")
			e.ingest("bars", 3*n, n) // seals the last segment, and is read from the log
			retainPast(t, e, tbl, 0, 3*n-1)
		}
	}
	endFollow(t, cancel, out, errc)
	seen.check(t, 4*n)
}

// segmentRows is what one ingest into newOneSegmentBars's table writes: a
// batch, and a segment, each.
const segmentRows = 100_000

// newOneSegmentBars returns an env with a log table "bars" of one bucket,
// 1 MiB segments and log.retention 1ms (retention deletes what a round
// tiered as soon as the next ingest seals its segment), into which ids
// [0, segments*segmentRows) were ingested, a segment each.
func newOneSegmentBars(t *testing.T, segments int) (*lakeEnv, *tables.Table) {
	e := newLakeEnv(t, Config{})
	e.exec(`CREATE TABLE bars (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR)
		WITH ('log.segment.bytes'='1MiB', 'log.retention'='1ms', 'log.compression'='none')`)
	for i := range segments {
		e.ingest("bars", i*segmentRows, segmentRows)
	}
	return e, e.table("bars")
}

// endFollow cancels a subscription (Follow sending to out, ending on
// errc) and waits for it to end, releasing what it still sends.
func endFollow(t testing.TB, cancel context.CancelFunc, out <-chan arrow.RecordBatch, errc <-chan error) {
	t.Helper()
	cancel()
	for {
		select {
		case rec := <-out:
			rec.Release()
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("follow: %v", err)
			}
			return
		}
	}
}
