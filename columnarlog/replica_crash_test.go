package columnarlog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// A crash at any filesystem operation of AppendReplica, Truncate or
// BecomeLeader leaves a follower that recovers to a consistent log (its
// epoch history agrees with its batch headers, it ends at its commit
// record, it holds a prefix of the leader's bytes) from which it catches
// up with the leader byte for byte.
func TestReplicaCrashAtEveryStep(t *testing.T) {
	type pair struct{ leader, follower *replica }
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) pair
		op    func(t *testing.T, p pair) error
	}{
		{"truncate", func(t *testing.T) pair {
			p := divergedPair(t)
			return pair{leader: p.follower, follower: p.leader} // the old leader follows
		}, func(t *testing.T, p pair) error {
			return reconcile(t, p.leader.tl, p.follower.tl, 0)
		}},
		{"append-replica", func(t *testing.T) pair {
			p := divergedPair(t)
			if err := reconcile(t, p.follower.tl, p.leader.tl, 0); err != nil {
				t.Fatal(err)
			}
			return pair{leader: p.follower, follower: p.leader}
		}, func(t *testing.T, p pair) error {
			_, err := fetch(t, p.leader.tl, p.follower.tl, 0) // a new epoch, segment rolls
			return err
		}},
		{"become-leader", func(t *testing.T) pair {
			p := divergedPair(t)
			if err := reconcile(t, p.follower.tl, p.leader.tl, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := fetch(t, p.follower.tl, p.leader.tl, 0); err != nil {
				t.Fatal(err)
			}
			return pair{leader: p.follower, follower: p.leader}
		}, func(t *testing.T, p pair) error {
			return p.follower.tl.Bucket(0).BecomeLeader(5)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Count the operations, then crash before each in turn. (A
			// commit round syncs in parallel: counters are atomic, and the
			// order of the parallel syncs may vary.)
			p := c.setup(t)
			var ops atomic.Int64
			p.follower.fs.InjectError(func(vfs.Op, string) error { ops.Add(1); return nil })
			if err := c.op(t, p); err != nil {
				t.Fatal(err)
			}
			p.follower.fs.InjectError(nil)
			for k := int64(1); k <= ops.Load(); k++ {
				for _, keep := range []bool{false, true} {
					p := c.setup(t)
					var crashed atomic.Pointer[vfs.MemFS]
					var n atomic.Int64
					fs := p.follower.fs
					fs.InjectError(func(vfs.Op, string) error {
						if n.Add(1) == k {
							co := vfs.CrashOptions{}
							if keep {
								co = vfs.CrashOptions{KeepUnsynced: true, Rand: rand.New(rand.NewPCG(uint64(k), 7))}
							}
							crashed.Store(fs.CrashClone(co))
						}
						return nil
					})
					if err := c.op(t, p); err != nil {
						t.Fatal(err)
					}
					fs.InjectError(nil)
					if crashed.Load() == nil {
						t.Fatalf("the operation did fewer than %d filesystem operations", k)
					}
					p.follower.fs = crashed.Load()
					p.follower.open(t)
					checkRecoveredFollower(t, fmt.Sprintf("crash before op %d (keep unsynced %t)", k, keep), p.leader, p.follower)
				}
			}
		})
	}
}

// divergedPair returns a leader of epoch 1 and a follower of epoch 2 that
// was its follower: the leader's log ends with batches of epoch 1 that the
// follower never had, the follower's with batches of epoch 2.
func divergedPair(t *testing.T) struct{ leader, follower *replica } {
	clock := newClock(recoveryEpoch)
	a, b := newReplica(t, 1, clock), newReplica(t, 1, clock)
	if err := a.tl.Bucket(0).BecomeLeader(1); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		clock.add(time.Second)
		appendRows(t, a.tl, 0, int64(i), 2, 150)
	}
	if _, err := fetch(t, a.tl, b.tl, 0); err != nil {
		t.Fatal(err)
	}
	a.tl.SetHighWatermark(0, 8)
	b.tl.SetHighWatermark(0, 8)
	for i := range 6 {
		clock.add(time.Second)
		appendRows(t, a.tl, 0, int64(10+i), 3, 150)
	}
	if err := b.tl.Bucket(0).BecomeLeader(2); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		clock.add(time.Second)
		appendRows(t, b.tl, 0, int64(20+i), 1, 90)
	}
	return struct{ leader, follower *replica }{a, b}
}

// checkRecoveredFollower checks a follower reopened after a crash, then
// has it catch up with the leader.
func checkRecoveredFollower(t *testing.T, what string, leader, follower *replica) {
	t.Helper()
	l := follower.tl.Bucket(0)
	checkEpochsAgree(t, l)
	if st := l.Stats(); st.Next != follower.tl.DurableEnds()[0] || st.Durable != st.Next || st.Committed > st.Durable {
		t.Fatalf("%s: %+v, durable ends %v", what, st, follower.tl.DurableEnds())
	}
	if err := reconcile(t, leader.tl, follower.tl, 0); err != nil {
		t.Fatalf("%s: reconcile: %v", what, err)
	}
	if _, err := fetch(t, leader.tl, follower.tl, 0); err != nil {
		t.Fatalf("%s: fetch: %v", what, err)
	}
	if !bytes.Equal(logBytes(t, leader.fs, 0), logBytes(t, follower.fs, 0)) {
		t.Fatalf("%s: the follower's segments differ from the leader's after catching up", what)
	}
	if lh, fh := leader.tl.Bucket(0).EpochHistory(), l.EpochHistory(); !slices.Equal(lh, fh[:min(len(fh), len(lh))]) || len(fh) > len(lh)+1 {
		t.Fatalf("%s: epochs: leader %v, follower %v", what, lh, fh)
	}
	checkEpochsAgree(t, l)
}
