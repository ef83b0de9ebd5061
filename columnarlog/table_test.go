package columnarlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

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

func TestTableLogDuplicateWrite(t *testing.T) {
	tl, err := OpenTable("/t", 2, Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	mk := func(seq int32) [][]Batch {
		var parts [][]Batch
		for range 2 {
			b, _ := NewBatch(Header{WriterID: 5, WriterSeq: seq, RecordCount: 1}, nil, nil, []byte("x"))
			parts = append(parts, []Batch{b})
		}
		return parts
	}
	if _, err := tl.Append(mk(0)); err != nil {
		t.Fatal(err)
	}
	res, err := tl.Append(mk(0))
	if err != nil || !res[0][0].Duplicate || !res[1][0].Duplicate {
		t.Fatalf("retried write: %+v %v", res, err)
	}
	if c := tl.Bucket(1).Committed(); c != 1 {
		t.Fatalf("bucket 1 committed %d after a duplicate, want 1", c)
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
