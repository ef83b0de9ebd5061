package tables

import (
	"math/rand/v2"
	"testing"
)

// TestLiveSet checks a live set against a map, across chunk boundaries,
// and that an earlier version is unchanged by the edits of later ones.
func TestLiveSet(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	model := map[int64]bool{}
	var cur *liveSet
	type snap struct {
		s    *liveSet
		want map[int64]bool
	}
	var snaps []snap
	const span = 3*liveChunkBits + 100
	for round := 0; round < 40; round++ {
		ed := cur.edit()
		for range 200 {
			off := r.Int64N(span)
			if r.IntN(3) == 0 {
				ed.clear(off)
				delete(model, off)
			} else {
				ed.set(off)
				model[off] = true
			}
		}
		cur = ed.done()
		cp := make(map[int64]bool, len(model))
		for k := range model {
			cp[k] = true
		}
		snaps = append(snaps, snap{cur, cp})
	}
	for i, sn := range snaps {
		if sn.s.count != int64(len(sn.want)) {
			t.Fatalf("version %d: count %d, want %d", i, sn.s.count, len(sn.want))
		}
		first := int64(-1)
		for off := int64(0); off < span+10; off++ {
			if sn.s.has(off) != sn.want[off] {
				t.Fatalf("version %d: has(%d) = %v", i, off, !sn.want[off])
			}
			if sn.want[off] && first < 0 {
				first = off
			}
		}
		if got := sn.s.first(); got != first {
			t.Fatalf("version %d: first %d, want %d", i, got, first)
		}
		for range 300 {
			from := r.Int64N(span + 10)
			to := from + r.Int64N(2*liveChunkBits)
			want := false
			for off := from; off < to && !want; off++ {
				want = sn.want[off]
			}
			if got := sn.s.anyIn(from, to); got != want {
				t.Fatalf("version %d: anyIn(%d, %d) = %v", i, from, to, got)
			}
		}
	}
	var empty *liveSet
	if empty.has(0) || empty.anyIn(0, 100) || empty.first() != -1 {
		t.Fatal("the nil live set is not empty")
	}
}
