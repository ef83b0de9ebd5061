package tables_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// DecodeMessage releases everything it allocates but the record it
// returns: after the record is released the allocator is back to zero.
func TestDecodeMessageReleasesEverything(t *testing.T) {
	for _, codec := range []arrowmsg.Codec{arrowmsg.CodecNone, arrowmsg.CodecLZ4, arrowmsg.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := events(t, memory.DefaultAllocator, 0, 100)
			defer rec.Release()
			msg, err := arrowmsg.AppendRecordBatch(nil, rec, codec, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			meta, body, err := arrowmsg.SplitMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tables.DecodeMessage(rec.Schema(), meta, body, mem)
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, "decoded", rowStrings(got), rowStrings(rec))
			got.Release()
		})
	}
}

// A batch over the log's MaxBatchBytes is refused with
// columnarlog.ErrBatchTooLarge and nothing of the write is stored.
func TestWriteBatchTooLarge(t *testing.T) {
	e := newEnvWith(t, vfs.NewMem(), columnarlog.Options{MaxBatchBytes: 4 << 10})
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2', 'bucket.key'='id', 'log.compression'='none')")
	tbl := e.table("ev")
	small := events(t, e.mem, 0, 10)
	big := events(t, e.mem, 10, 2000)
	defer small.Release()
	defer big.Release()
	_, err := tbl.Write(context.Background(), small, big)
	if !errors.Is(err, columnarlog.ErrBatchTooLarge) {
		t.Fatalf("oversized write: %v, want ErrBatchTooLarge", err)
	}
	if rows := flatten(readBuckets(t, tbl, allCols(tbl))); len(rows) != 0 {
		t.Errorf("%d rows stored by a refused write", len(rows))
	}
	e.write(tbl, events(t, e.mem, 0, 10))
	if rows := flatten(readBuckets(t, tbl, allCols(tbl))); len(rows) != 10 {
		t.Errorf("%d rows after a good write following the refused one, want 10", len(rows))
	}
}

// Concurrent writers: every write lands exactly once and bucket offsets
// stay dense.
func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3', 'bucket.key'='id')")
	tbl := e.table("ev")
	const writers, writes, rows = 4, 10, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				if err := writeRows(tbl, e.mem, (w*writes+i)*rows, rows); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := expectRows(events(t, e.mem, 0, writers*writes*rows))
	sameRows(t, "after concurrent writes", flatten(readBuckets(t, tbl, allCols(tbl))), want)
	for _, r := range tbl.LogRanges() {
		var next int64
		err := tbl.ReadBatches(context.Background(), r, func(b columnarlog.Batch) error {
			if b.BaseOffset() != next {
				t.Errorf("bucket %d: batch at %d, want %d", r.Bucket, b.BaseOffset(), next)
			}
			next = b.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next != r.To {
			t.Errorf("bucket %d: batches end at %d, committed %d", r.Bucket, next, r.To)
		}
	}
}

func writeRows(tbl *tables.Table, mem memory.Allocator, from, n int) error {
	rec := events(nil, mem, from, n)
	c, err := tbl.Conform(rec)
	rec.Release()
	if err != nil {
		return err
	}
	defer c.Release()
	_, err = tbl.Write(context.Background(), c)
	return err
}

// A write spanning several buckets is atomic for readers too: a snapshot
// taken while it commits holds all of its rows or none. (The log makes it
// atomic across crashes; Snapshot reads each bucket's committed offset in
// turn, and the commit publishes them in turn.)
func TestSnapshotSeesWholeWrites(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	tbl := e.table("ev")
	const writes, rows = 50, 40 // 40 keys reach all 4 buckets
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < writes && !stop.Load(); i++ {
			if err := writeRows(tbl, e.mem, i*rows, rows); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { <-done }()
	for {
		select {
		case <-done:
			return
		default:
		}
		snap := tbl.LogRanges()
		var n int64
		for _, r := range snap {
			n += r.To - r.From
		}
		if n%rows != 0 {
			stop.Store(true)
			t.Errorf("a snapshot saw part of a write of %d rows: %+v", rows, snap)
			return
		}
		runtime.Gosched()
	}
}
