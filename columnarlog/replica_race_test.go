package columnarlog

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Replica readers reading while the follower's tail is cut and refetched
// from one leader, then the other, again and again: every batch they
// return is one of the two leaders' batches at its offset, whole and
// checked, and a reader that a cut passes ends with ErrTruncated — never a
// corruption error, never a mix of the two.
func TestReplicaReadersDuringTruncate(t *testing.T) {
	clock := newClock(recoveryEpoch)
	a, b, f := newReplica(t, 1, clock), newReplica(t, 1, clock), newReplica(t, 1, clock)
	defer a.tl.Close()
	defer b.tl.Close()
	defer f.tl.Close()
	if err := a.tl.Bucket(0).BecomeLeader(1); err != nil {
		t.Fatal(err)
	}
	appendRows(t, a.tl, 0, 1, 10, 100)
	if _, err := fetch(t, a.tl, b.tl, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.tl.Bucket(0).BecomeLeader(2); err != nil {
		t.Fatal(err)
	}
	for i := range 12 { // segments of 1 KiB: the tails span several
		clock.add(time.Second)
		appendRows(t, a.tl, 0, int64(10+i), 3, 200)
		appendRows(t, b.tl, 0, int64(30+i), 2, 150)
	}
	want := map[int64][][]byte{} // base offset → the batches the leaders have there
	for _, r := range []*replica{a, b} {
		for _, batch := range replicaBatches(t, r.tl.Bucket(0), r.tl.Bucket(0).Durable()) {
			want[batch.BaseOffset()] = append(want[batch.BaseOffset()], bytes.Clone(batch))
		}
	}
	if _, err := fetch(t, a.tl, f.tl, 0); err != nil {
		t.Fatal(err)
	}
	f.tl.SetHighWatermark(0, 10)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	l := f.tl.Bucket(0)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				from := []int64{0, 10, l.Durable()}[(w+i)%3]
				rd, err := l.NewReplicaReader(from)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // cut between Durable and NewReplicaReader
				}
				if err != nil {
					t.Error(err)
					return
				}
				for {
					bs, _, err := rd.Next(nil, 1<<10)
					if errors.Is(err, ErrTruncated) {
						break
					}
					if err != nil {
						t.Errorf("read from %d: %v", from, err)
						rd.Close()
						return
					}
					if len(bs) == 0 {
						break
					}
					for _, batch := range bs {
						found := false
						for _, w := range want[batch.BaseOffset()] {
							found = found || bytes.Equal(w, batch)
						}
						if !found {
							t.Errorf("a batch at %d that neither leader has", batch.BaseOffset())
						}
						reads.Add(1)
					}
				}
				rd.Close()
			}
		}()
	}
	for i := range 20 {
		leader := []*replica{a, b}[(i+1)%2]
		if err := reconcile(t, leader.tl, f.tl, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := fetch(t, leader.tl, f.tl, 0); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("the readers read nothing")
	}
	if !bytes.Equal(logBytes(t, f.fs, 0), logBytes(t, a.fs, 0)) {
		t.Fatal("after the last fetch, the follower does not hold the leader's bytes")
	}
}
