package columnarlog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakestream/lakestream/internal/vfs"
)

// replModel drives three replicas of a two-bucket table through random
// appends on the leader, follower fetches, leader changes, crashes and
// checkpoints, as a cluster's replication would, and keeps what must hold:
// the batches below the highest high watermark set so far (hw), which
// every replica must hold, byte for byte, whatever happens after.
type replModel struct {
	t     *testing.T
	rng   *rand.Rand
	clock *fakeClock
	reps  []*replica
	// leader is the index of the leading replica, epoch its epoch.
	leader int
	epoch  int32
	// matched[r][b] is the end of follower r's bucket b as of its last
	// fetch in this epoch, -1 before it has fetched; reconciled[r][b] says
	// that it has cut its divergent tail since the epoch began.
	matched    [][]int64
	reconciled [][]bool
	hw         []int64   // per bucket
	committed  [][]Batch // per bucket: the batches below hw
	writes     int64
}

const (
	modelReplicas = 3
	modelBuckets  = 2
)

func TestReplicationModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := newReplModel(t, seed)
			for range 150 {
				m.step()
				m.check()
			}
			for _, r := range m.reps {
				if err := r.tl.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func newReplModel(t *testing.T, seed uint64) *replModel {
	m := &replModel{t: t, rng: rand.New(rand.NewPCG(seed, 5)), clock: newClock(recoveryEpoch)}
	for range modelReplicas {
		m.reps = append(m.reps, newReplica(t, modelBuckets, m.clock))
	}
	m.hw = make([]int64, modelBuckets)
	m.committed = make([][]Batch, modelBuckets)
	m.elect(0)
	return m
}

// elect makes replica r the leader of a new epoch.
func (m *replModel) elect(r int) {
	m.leader = r
	m.epoch++
	for b := range modelBuckets {
		// Every replica holds the batches below the high watermark: a new
		// leader loses none of them.
		if d := m.reps[r].tl.DurableEnds()[b]; d < m.hw[b] {
			m.t.Fatalf("electing replica %d: bucket %d ends at %d, below the high watermark %d", r, b, d, m.hw[b])
		}
		if err := m.reps[r].tl.Bucket(b).BecomeLeader(m.epoch); err != nil {
			m.t.Fatal(err)
		}
	}
	m.matched = make([][]int64, modelReplicas)
	m.reconciled = make([][]bool, modelReplicas)
	for i := range m.matched {
		m.matched[i] = []int64{-1, -1}
		m.reconciled[i] = make([]bool, modelBuckets)
	}
}

func (m *replModel) step() {
	t, rng := m.t, m.rng
	m.clock.add(time.Duration(rng.IntN(3000)) * time.Millisecond)
	switch op := rng.IntN(22); {
	case op < 8: // a write on the leader
		m.writes++
		parts := writeParts(t, rng, m.writes, modelBuckets)
		if _, err := m.reps[m.leader].tl.Append(parts); err != nil {
			t.Fatalf("append on the leader: %v", err)
		}
	case op < 15: // a follower fetches
		f := (m.leader + 1 + rng.IntN(modelReplicas-1)) % modelReplicas
		for b := range modelBuckets {
			m.fetch(f, b)
		}
	case op < 17: // the leader changes
		m.elect((m.leader + 1 + rng.IntN(modelReplicas-1)) % modelReplicas)
	case op < 19: // a replica crashes and restarts
		r := rng.IntN(modelReplicas)
		m.reps[r].crash(t, vfs.CrashOptions{KeepUnsynced: rng.IntN(2) == 0, Rand: rng})
		if r != m.leader {
			// A restarted follower cuts its divergent tail again.
			m.reconciled[r] = make([]bool, modelBuckets)
		}
	case op < 20: // a follower crashes in the middle of a fetch
		f := (m.leader + 1 + rng.IntN(modelReplicas-1)) % modelReplicas
		m.crashDuring(f, func() {
			leader, follower := m.reps[m.leader].tl, m.reps[f].tl
			for b := range modelBuckets {
				if !m.reconciled[f][b] {
					if err := reconcile(t, leader, follower, b); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := fetch(t, leader, follower, b); err != nil {
					t.Fatal(err)
				}
			}
		})
		m.reconciled[f] = make([]bool, modelBuckets)
	case op < 21: // the leader crashes in the middle of a write
		m.writes++
		parts := writeParts(t, rng, m.writes, modelBuckets)
		m.crashDuring(m.leader, func() {
			if _, err := m.reps[m.leader].tl.Append(parts); err != nil {
				t.Fatal(err)
			}
		})
	default:
		if err := m.reps[rng.IntN(modelReplicas)].tl.CheckpointHighWatermarks(); err != nil {
			t.Fatal(err)
		}
	}
}

// fetch has follower f reconcile bucket b with the leader if it has not
// since the epoch began, and copy the leader's new batches; the leader's
// high watermark then moves to what every replica holds, and the
// follower's to the leader's.
func (m *replModel) fetch(f, b int) {
	t := m.t
	leader, follower := m.reps[m.leader].tl, m.reps[f].tl
	if !m.reconciled[f][b] {
		if err := reconcile(t, leader, follower, b); err != nil {
			t.Fatalf("replica %d, bucket %d: reconcile: %v", f, b, err)
		}
		m.reconciled[f][b] = true
	}
	if _, err := fetch(t, leader, follower, b); err != nil {
		t.Fatalf("replica %d, bucket %d: fetch: %v", f, b, err)
	}
	m.matched[f][b] = follower.DurableEnds()[b]
	hw := leader.DurableEnds()[b]
	for r := range m.reps {
		if r != m.leader {
			hw = min(hw, m.matched[r][b])
		}
	}
	if hw >= 0 {
		leader.SetHighWatermark(b, hw)
	}
	follower.SetHighWatermark(b, leader.HighWatermark(b))
	if hw > m.hw[b] {
		m.committed[b] = replicaBatches(t, leader.Bucket(b), hw)
		m.hw[b] = hw
	}
}

// check checks every replica against the model.
func (m *replModel) check() {
	t := m.t
	for r, rep := range m.reps {
		for b := range modelBuckets {
			l := rep.tl.Bucket(b)
			st := l.Stats()
			if st.Durable < m.hw[b] || st.Committed > m.hw[b] || st.Committed > st.Durable || st.Next != st.Durable {
				t.Fatalf("replica %d, bucket %d: %+v, high watermark %d", r, b, st, m.hw[b])
			}
			if rep.tl.CommittedEnds()[b] != st.Committed {
				t.Fatalf("replica %d, bucket %d: committed ends %v, committed %d", r, b, rep.tl.CommittedEnds(), st.Committed)
			}
			// The batches below the high watermark are all there, the
			// same bytes; a reader sees them up to the replica's own.
			got := replicaBatches(t, l, m.hw[b])
			if len(got) != len(m.committed[b]) {
				t.Fatalf("replica %d, bucket %d: %d batches below the high watermark %d, want %d", r, b, len(got), m.hw[b], len(m.committed[b]))
			}
			for i := range got {
				if !bytes.Equal(got[i], m.committed[b][i]) {
					t.Fatalf("replica %d, bucket %d: batch %d at %d differs", r, b, i, got[i].BaseOffset())
				}
			}
			visible := visibleBatches(t, l)
			if n := len(visible); n > len(got) || n > 0 && visible[n-1].NextOffset() != st.Committed || n == 0 && st.Committed != 0 {
				t.Fatalf("replica %d, bucket %d: a reader sees %d batches, committed %d", r, b, n, st.Committed)
			}
			checkEpochsAgree(t, l)
		}
	}
}

// crashDuring runs op on replica r, crashing it at a random one of the
// filesystem operations op does: what op did is not acknowledged, and the
// replica restarts from what the crash left.
func (m *replModel) crashDuring(r int, op func()) {
	rep := m.reps[r]
	fs := rep.fs
	at := int64(1 + m.rng.IntN(40))
	co := vfs.CrashOptions{KeepUnsynced: m.rng.IntN(2) == 0, Rand: rand.New(rand.NewPCG(m.rng.Uint64(), 1))}
	var n atomic.Int64
	var crashed atomic.Pointer[vfs.MemFS]
	fs.InjectError(func(vfs.Op, string) error {
		if n.Add(1) == at {
			crashed.Store(fs.CrashClone(co))
		}
		return nil
	})
	op()
	fs.InjectError(nil)
	if c := crashed.Load(); c != nil {
		rep.fs = c
	} else {
		rep.fs = fs.CrashClone(co) // op ended first: a crash right after it
	}
	rep.open(m.t)
}
