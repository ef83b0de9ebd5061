package columnarlog

import (
	"fmt"
	"math/rand/v2"
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
					}
				}()
			}
			// Crash while the writers run: snapshot what was acknowledged
			// first, then the filesystem.
			crashAfter := rng.IntN(100)
			for {
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n >= crashAfter {
					break
				}
				<-tl.Bucket(0).Notify()
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
