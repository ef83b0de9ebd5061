package tables

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPKStateEachDead compares EachDead with a map model over random
// edits, including chunks shared between the two states.
func TestPKStateEachDead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		span := int64(1 + rng.IntN(4*liveChunkBits))
		b := NewPKStateBuilder([]int64{span})
		model := map[int64]bool{}
		for i := 0; i < rng.IntN(2000); i++ {
			off := rng.Int64N(span)
			b.Set(0, off)
			model[off] = true
		}
		prev := b.Done()
		// The next state: an edit of prev, as a write makes it.
		ed := prev.s.live[0].edit()
		next := map[int64]bool{}
		for k := range model {
			next[k] = true
		}
		for i := 0; i < rng.IntN(500); i++ {
			off := rng.Int64N(span)
			if rng.IntN(2) == 0 {
				ed.clear(off)
				delete(next, off)
			} else {
				ed.set(off)
				next[off] = true
			}
		}
		cur := PKState{&pkState{ends: []int64{span}, live: []*liveSet{ed.done()}}}
		below := rng.Int64N(span + 1)
		var want, got []int64
		for k := range model {
			if !next[k] && k < below {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if err := cur.EachDead(prev, 0, below, func(off int64) error {
			got = append(got, off)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: dead %v, want %v", round, got, want)
		}
		for k := range next {
			if !cur.Live(0, k) {
				t.Fatalf("round %d: %d not live", round, k)
			}
		}
	}
}
