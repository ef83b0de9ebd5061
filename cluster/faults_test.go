package cluster

import (
	"context"
	"crypto/sha256"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lakestream/lakestream/columnarlog"
)

var faultRounds = flag.Int("fault-rounds", 50, "rounds of TestFaultRounds")

// observation is what a reader saw on one node: a bucket's visible bytes
// up to its high watermark, hashed.
type observation struct {
	ref  BucketRef
	node string
	hw   int64
	sum  [32]byte
}

// Rounds of faults — a bucket leader killed, a follower killed, the
// controller's node killed, a follower's links to the leader cut, the
// leader isolated from every node and from gossip while it goes on taking
// writes — each healed before the next, with writers on every bucket
// throughout and readers sampling each node's visible log between rounds.
// At the end: every acknowledged batch is in the log exactly once, the
// replicas are byte-identical up to the high watermark, and everything a
// reader saw is still there, byte for byte. The counts are logged
// (docs/cluster.md).
func TestFaultRounds(t *testing.T) {
	rounds := *faultRounds
	if testing.Short() {
		rounds = 10
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newRealCluster(t, ctx)
	w := c.startWriters()
	c.waitProgress(w, "writes acknowledged", 10)
	kinds := map[string]int{}
	var seen []observation
	staleAcks := 0
	for round := range rounds {
		ref := c.refs[rng.IntN(len(c.refs))]
		st := c.bucket(ref)
		if st.Leader == "" {
			t.Fatalf("round %d: %s has no leader", round, ref)
		}
		follower := st.ISR[rng.IntN(len(st.ISR))]
		if follower == st.Leader {
			follower = otherThan(st.Replicas, st.Leader, rng)
		}
		switch kind := []string{"kill leader", "kill follower", "kill controller", "cut follower", "isolate leader"}[rng.IntN(5)]; kind {
		case "kill leader":
			kinds[kind]++
			c.kill(st.Leader)
			c.waitProgress(w, "writes after the leader died", 5)
			c.revive(st.Leader)
			c.waitInSync(st.Leader)
		case "kill follower":
			kinds[kind]++
			c.kill(follower)
			c.waitProgress(w, "writes with a follower dead", 5)
			c.revive(follower)
			c.waitInSync(follower)
		case "kill controller":
			l, err := c.store.Lease(ctx, ControllerLease)
			if err != nil {
				continue // between holders: another round
			}
			kinds[kind]++
			c.kill(l.Holder)
			c.waitProgress(w, "writes after the controller died", 5)
			c.revive(l.Holder)
			c.waitInSync(l.Holder)
		case "cut follower":
			kinds[kind]++
			c.net.set(st.Leader, follower, true)
			c.waitProgress(w, "writes with a follower cut off", 5)
			c.net.set(st.Leader, follower, false)
			c.waitInSync(follower)
		case "isolate leader":
			kinds[kind]++
			old := st.Leader
			for _, id := range st.Replicas {
				c.net.set(old, id, true)
			}
			c.live.set(old, false)
			// The isolated leader goes on taking writes (a client that
			// still talks to it): none may be acknowledged.
			if n := c.node(old); n != nil {
				staleAcks += staleWrites(ctx, n, ref, 3)
			}
			c.waitProgress(w, "writes after the leader was isolated", 5)
			for _, id := range st.Replicas {
				c.net.set(old, id, false)
			}
			c.live.set(old, true)
			c.waitInSync(old)
		}
		seen = append(seen, c.observe()...)
	}
	w.stop()
	w.wg.Wait()
	lost, dup := c.check(w)
	if staleAcks > 0 {
		t.Errorf("an isolated leader acknowledged %d writes", staleAcks)
	}
	// Everything a reader saw is still there.
	vanished := 0
	for _, o := range seen {
		leader := c.node(c.bucket(o.ref).Leader)
		if sha256.Sum256(replicaBytes(t, leader.tl, int(o.ref.Bucket), o.hw)) != o.sum {
			vanished++
			t.Errorf("what a reader saw on %s of %s up to %d is no longer there", o.node, o.ref, o.hw)
		}
	}
	w.mu.Lock()
	acks := 0
	for _, ids := range w.acked {
		acks += len(ids)
	}
	t.Logf("%d rounds, faults %v; %d writes acknowledged, %d lost, %d duplicated, %d failed (retried); %d isolated-leader writes acknowledged; %d reads checked, %d saw rows that vanished",
		rounds, kinds, acks, lost, dup, w.fails, staleAcks, len(seen), vanished)
	w.mu.Unlock()
}

func otherThan(ids []string, not string, rng *rand.Rand) string {
	for {
		if id := ids[rng.IntN(len(ids))]; id != not {
			return id
		}
	}
}

// staleWrites appends n batches on a leader cut off from its followers and
// returns how many were acknowledged within a short wait.
func staleWrites(ctx context.Context, n *realNode, ref BucketRef, count int) int {
	acked := 0
	for i := range count {
		msg := make([]byte, 64)
		msg[0] = byte(i)
		parts := make([][]columnarlog.Batch, n.tl.Buckets())
		b, err := columnarlog.NewBatch(columnarlog.Header{SchemaID: 1, RecordCount: 4}, nil, nil, msg)
		if err != nil {
			return acked
		}
		parts[ref.Bucket] = []columnarlog.Batch{b}
		if n.r.BeforeWrite(ref) != nil {
			continue
		}
		res, err := n.tl.Append(parts)
		if err != nil {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		if n.r.WaitAcked(wctx, ref, res[ref.Bucket][0].BaseOffset+4) == nil {
			acked++
		}
		cancel()
	}
	return acked
}

// observe reads every live node's visible log of every bucket.
func (c *realCluster) observe() []observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []observation
	for id, n := range c.nodes {
		for _, ref := range c.refs {
			hw := n.tl.HighWatermark(int(ref.Bucket))
			b := replicaBytes(c.t, n.tl, int(ref.Bucket), hw)
			out = append(out, observation{ref: ref, node: id, hw: hw, sum: sha256.Sum256(b)})
		}
	}
	return out
}
