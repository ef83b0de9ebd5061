package cluster

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/lakestream/lakestream/columnarlog"
)

// A follower is down while its leader deletes the segments past the
// follower's end (retention, as once they are tiered). Restarted, its
// fetch is below the leader's log start: it restarts its log at the
// leader's start, fetches from there and rejoins the in-sync set, holding
// the leader's bytes from that start; its epoch history starts there and
// its high watermark did not move back.
func TestFollowerRestartsAtLeaderLogStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newRealClusterWith(t, ctx, 1<<10)
	ref := c.refs[0]
	b := int(ref.Bucket)
	for i := range 10 {
		writeOK(c, ref, int64(i))
	}
	st := c.bucket(ref)
	follower := st.Replicas[0]
	if follower == st.Leader {
		follower = st.Replicas[1]
	}
	fn := c.node(follower)
	waitCond(t, follower+" holds the first writes", func() bool { return fn.tl.HighWatermark(b) >= 40 })
	c.kill(follower)
	// Enough writes, on the same leader, for several segments past the
	// stopped follower's end.
	for i := 10; i < 60; i++ {
		writeOK(c, ref, int64(i))
	}
	if now := c.bucket(ref); now.Leader != st.Leader || now.Epoch != st.Epoch {
		t.Fatalf("the leader moved during the test: %+v, was %+v", now, st)
	}
	leader := c.node(st.Leader)
	ll := leader.tl.Bucket(b)
	hw := leader.tl.HighWatermark(b)
	n, err := ll.ApplyRetention(columnarlog.Retention{MaxBytes: 1, Floor: hw})
	if err != nil {
		t.Fatal(err)
	}
	start := ll.Start()
	if n == 0 || start <= 40 {
		t.Fatalf("retention deleted %d segments, the leader's log starts at %d: want it past the follower's end 40", n, start)
	}

	c.revive(follower)
	c.waitInSync(follower)
	fn = c.node(follower)
	fl := fn.tl.Bucket(b)
	if got := fl.Start(); got != start {
		t.Fatalf("the follower's log starts at %d, the leader's at %d", got, start)
	}
	for i := 60; i < 70; i++ {
		writeOK(c, ref, int64(i))
	}
	hw = leader.tl.HighWatermark(b)
	waitCond(t, follower+" reaches the high watermark", func() bool { return fl.Durable() >= hw && fn.tl.HighWatermark(b) >= start })
	lb, fb := replicaBytes(t, leader.tl, b, hw), replicaBytes(t, fn.tl, b, hw)
	if len(lb) == 0 || !bytes.Equal(lb, fb) {
		t.Fatalf("the follower's bytes from %d to %d differ from the leader's (%d and %d bytes)", start, hw, len(fb), len(lb))
	}
	if got := readIDs(t, fn.tl, b, hw); !slices.Equal(got, readIDs(t, leader.tl, b, hw)) || got[len(got)-1] != 69 {
		t.Fatalf("the follower's batches are %v", got)
	}
	h := fl.EpochHistory()
	if len(h) == 0 || h[0].Start != start || h[len(h)-1].Epoch != st.Epoch {
		t.Fatalf("the follower's epoch history is %+v, want it to start at %d with epoch %d last", h, start, st.Epoch)
	}
	// Restarted from its directory, the follower keeps its new start.
	c.kill(follower)
	c.revive(follower)
	c.waitInSync(follower)
	if got := c.node(follower).tl.Bucket(b).Start(); got != start {
		t.Fatalf("reopened, the follower's log starts at %d, want %d", got, start)
	}
}

// writeOK writes batch id to ref's leader, retrying while the in-sync set
// shrinks (a stopped follower holds acknowledgements until it is dropped).
func writeOK(c *realCluster, ref BucketRef, id int64) {
	c.t.Helper()
	var err error
	waitCond(c.t, "write acknowledged", func() bool {
		err = c.write(ref, id)
		return err == nil
	})
}
