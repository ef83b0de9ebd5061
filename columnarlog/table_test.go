package columnarlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// writeParts makes a write of id with a part in each bucket the rng picks.
func writeParts(t testing.TB, rng *rand.Rand, id int64, buckets int) [][]Batch {
	parts := make([][]Batch, buckets)
	for b := range parts {
		for range rng.IntN(3) {
			parts[b] = append(parts[b], payload(t, id, int32(rng.IntN(5)+1), rng.IntN(400)))
		}
	}
	if countParts(parts) == 0 {
		parts[0] = []Batch{payload(t, id, 1, 10)}
	}
	return parts
}

func countParts(parts [][]Batch) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// tableContents maps write id → the buckets holding a part of it.
func tableContents(t testing.TB, tl *TableLog) map[int64][]int {
	got := map[int64][]int{}
	for b := 0; b < tl.Buckets(); b++ {
		for _, batch := range readAll(t, tl.Bucket(b), 0) {
			id := payloadID(t, batch)
			got[id] = append(got[id], b)
		}
	}
	return got
}

func TestTableLogWritesAreAtomicAcrossCrashes(t *testing.T) {
	const buckets = 4
	for seed := uint64(1); seed <= 15; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			fs := vfs.NewMem()
			tl, err := OpenTable("/t", buckets, memOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]int{} // id → number of parts
			var mu sync.Mutex
			acked := map[int64]bool{}
			// ackedMore has an element after an acknowledgement not yet
			// seen; writersDone is closed once every writer has returned.
			ackedMore := make(chan struct{}, 1)
			writersDone := make(chan struct{})
			var wg sync.WaitGroup
			var crashed *vfs.MemFS
			var ackedAtCrash map[int64]bool
			for w := 0; w < 4; w++ {
				wrng := rand.New(rand.NewPCG(seed, uint64(w)))
				parts := make([][][]Batch, 30)
				for i := range parts {
					id := int64(w*1000 + i)
					parts[i] = writeParts(t, wrng, id, buckets)
					want[id] = countParts(parts[i])
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i, p := range parts {
						if _, err := tl.Append(p); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acked[int64(w*1000+i)] = true
						mu.Unlock()
						select {
						case ackedMore <- struct{}{}:
						default:
						}
					}
				}()
			}
			go func() {
				wg.Wait()
				close(writersDone)
			}()
			// Crash while the writers run: snapshot what was acknowledged
			// first, then the filesystem. (Waiting on a bucket's Notify
			// instead lost wakeups: the acknowledgements it waited for could
			// all land between the count and the wait.)
			crashAfter := rng.IntN(100)
		wait:
			for {
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n >= crashAfter {
					break
				}
				select {
				case <-ackedMore:
				case <-writersDone:
					break wait // the writers failed: they reported why
				}
			}
			mu.Lock()
			ackedAtCrash = map[int64]bool{}
			for id := range acked {
				ackedAtCrash[id] = true
			}
			mu.Unlock()
			crashed = fs.CrashClone(vfs.CrashOptions{KeepUnsynced: true, Rand: rng, TornGarbage: seed%3 == 0})
			wg.Wait()
			tl.Close()

			tl2, err := OpenTable("/t", buckets, memOpts(crashed))
			if err != nil {
				t.Fatal(err)
			}
			defer tl2.Close()
			got := tableContents(t, tl2)
			for id := range ackedAtCrash {
				if len(got[id]) != want[id] {
					t.Fatalf("acknowledged write %d has %d of %d parts after crash", id, len(got[id]), want[id])
				}
			}
			for id, bs := range got {
				if len(bs) != want[id] {
					t.Fatalf("write %d half visible: parts in buckets %v, want %d parts", id, bs, want[id])
				}
			}
		})
	}
}

// A TableLog stores the writer and sequence of every batch without
// checking them per bucket (a write spreads over the buckets differently
// each time, and may put two batches in one bucket), and Writers gives each
// writer's last sequence back, after a reopen too. A writer idle for longer
// than WriterExpiry is forgotten when a segment rolls or the log opens.
func TestTableLogWriters(t *testing.T) {
	fs := vfs.NewMem()
	now := time.Unix(1_700_000_000, 0)
	opts := Options{FS: fs, Now: func() time.Time { return now }, WriterExpiry: time.Hour, SegmentBytes: 4 << 10}
	tl, err := OpenTable("/t", 2, opts)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(writer int64, seq int32, perBucket ...int) [][]Batch {
		parts := make([][]Batch, 2)
		for b, n := range perBucket {
			for range n {
				p, err := NewBatch(Header{WriterID: writer, WriterSeq: seq, RecordCount: 1}, nil, nil, []byte("x"))
				if err != nil {
					t.Fatal(err)
				}
				parts[b] = append(parts[b], p)
			}
		}
		return parts
	}
	for _, w := range [][][]Batch{mk(5, 0, 1, 1), mk(5, 1, 0, 1), mk(5, 2, 2, 0), mk(5, 3, 0, 2), mk(9, 7, 1, 0)} {
		if _, err := tl.Append(w); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]WriterState{5: {Seq: 3, Timestamp: now.UnixMicro()}, 9: {Seq: 7, Timestamp: now.UnixMicro()}}
	if got := tl.Writers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("writers %v, want %v", got, want)
	}
	if ends := tl.CommittedEnds(); ends[0] != 4 || ends[1] != 4 {
		t.Fatalf("committed ends %v, want [4 4]: every batch written", ends)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if tl, err = OpenTable("/t", 2, opts); err != nil {
		t.Fatal(err)
	}
	if got := tl.Writers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("writers after a reopen %v, want %v", got, want)
	}
	// Two hours on, writer 9 writes again and bucket 0 rolls: writer 5,
	// idle, is left out of the snapshot; writer 9 stays.
	now = now.Add(2 * time.Hour)
	big, err := NewBatch(Header{WriterID: 9, WriterSeq: 8, RecordCount: 1}, nil, nil, make([]byte, 5<<10))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tl.Append([][]Batch{{big}, nil}); err != nil {
			t.Fatal(err)
		}
		big, _ = NewBatch(Header{WriterID: 9, WriterSeq: 9, RecordCount: 1}, nil, nil, make([]byte, 5<<10))
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if tl, err = OpenTable("/t", 2, opts); err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	want = map[int64]WriterState{9: {Seq: 9, Timestamp: now.UnixMicro()}}
	if got := tl.Writers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("writers after expiry %v, want %v", got, want)
	}
}

// A crash during a commit round can leave its record durable and some of
// its data not, as the two are synced in parallel. Recovery falls back to
// the record before, which is always whole; two records in a row that the
// data does not reach are corruption.
func TestTableLogRecoversFromUnfinishedRound(t *testing.T) {
	for _, c := range []struct {
		name     string
		dangling int // records appended beyond the data
		err      error
	}{
		{"one record past the data", 1, nil},
		{"two records past the data", 2, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			tl, err := OpenTable("/t", 2, memOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tl.Append([][]Batch{{payload(t, 1, 3, 50)}, {payload(t, 1, 2, 50)}}); err != nil {
				t.Fatal(err)
			}
			ends := append([]int64(nil), tl.CommittedEnds()...)
			if err := tl.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := fs.OpenAppend("/t/" + commitFileName)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.dangling {
				if _, err := f.Write(encodeCommit(int64(2+i), []int64{ends[0] + 4, ends[1]})); err != nil {
					t.Fatal(err)
				}
			}
			if err := errors.Join(f.Sync(), f.Close()); err != nil {
				t.Fatal(err)
			}

			tl2, err := OpenTable("/t", 2, memOpts(fs))
			if !errors.Is(err, c.err) {
				t.Fatalf("reopen: %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			defer tl2.Close()
			if got := tl2.CommittedEnds(); !slices.Equal(got, ends) {
				t.Errorf("recovered ends %v, want %v", got, ends)
			}
			if got := tableContents(t, tl2); len(got[1]) != 2 {
				t.Errorf("write 1 in buckets %v, want both", got[1])
			}
		})
	}
}

// After a clean close the commit file holds one record, so a bucket that
// lost acknowledged data of the last write is corruption, not a round cut
// by a crash.
func TestTableLogLossAfterCleanCloseIsCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	tl, err := OpenTable("/t", 2, memOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	first := payload(t, 1, 3, 50)
	for id := range int64(2) {
		if _, err := tl.Append([][]Batch{{payload(t, id+1, 3, 50)}, {payload(t, id+1, 2, 50)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Append([][]Batch{{payload(t, 3, 1, 10)}, nil}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}
	// Cut bucket 0 back to its first batch, as damage to the segment would.
	f, err := fs.OpenAppend("/t/0/" + segmentName(0, logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Truncate(int64(len(first))), f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTable("/t", 2, memOpts(fs)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reopen: %v, want ErrCorrupt", err)
	}
}
