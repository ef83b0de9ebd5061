package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var ref0 = BucketRef{TableID: 1, Bucket: 0}

// testCluster is three nodes' replicas of one bucket over a direct
// transport, with an in-memory metadata record of the bucket that
// in-sync set changes compare-and-set, as the metadata store does.
type testCluster struct {
	t     *testing.T
	tr    *directTransport
	nodes map[string]*Replicas
	logs  map[string]*memLog

	mu struct {
		sync.Mutex
		a Assignment
	}
}

func newTestCluster(t *testing.T, lagMax time.Duration, ids ...string) *testCluster {
	return newTestClusterWait(t, lagMax, 50*time.Millisecond, ids...)
}

// newTestClusterWait is newTestCluster whose leaders hold a fetch at
// their end up to fetchMaxWait.
func newTestClusterWait(t *testing.T, lagMax, fetchMaxWait time.Duration, ids ...string) *testCluster {
	c := &testCluster{t: t, tr: &directTransport{nodes: map[string]*Replicas{}, cut: map[string]bool{}}, nodes: map[string]*Replicas{}, logs: map[string]*memLog{}}
	for _, id := range ids {
		r, err := NewReplicas(Config{NodeID: id, ReplicaLagMax: lagMax, FetchMaxWait: fetchMaxWait, RetryBackoff: 5 * time.Millisecond,
			RetryBackoffMax: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, c.tr, c.isrChange)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id], c.logs[id] = r, newMemLog()
		c.tr.nodes[id] = r
		if err := r.Add(ref0, c.logs[id]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
	}
	return c
}

// isrChange is the leader's proposal written by compare-and-set on the
// version, then read by every node.
func (c *testCluster) isrChange(ref BucketRef) ISRChange {
	return func(ctx context.Context, epoch int32, base int64, isr []string) (int64, error) {
		c.mu.Lock()
		if c.mu.a.Epoch != epoch || c.mu.a.Version != base {
			c.mu.Unlock()
			return 0, fmt.Errorf("version %d epoch %d is stale: the bucket is at %d, %d", base, epoch, c.mu.a.Version, c.mu.a.Epoch)
		}
		c.mu.a.ISR = slices.Clone(isr)
		c.mu.a.Version++
		a := c.mu.a
		c.mu.Unlock()
		go c.applyAll(a)
		return a.Version, nil
	}
}

// elect makes leader lead at the next epoch with isr, and every node
// applies it.
func (c *testCluster) elect(leader string, isr []string, minISR int) {
	c.mu.Lock()
	c.mu.a = Assignment{Ref: ref0, Replicas: slices.Sorted(maps.Keys(c.nodes)), Leader: leader, LeaderAddr: leader,
		Epoch: c.mu.a.Epoch + 1, ISR: isr, MinISR: minISR, Version: c.mu.a.Version + 1}
	a := c.mu.a
	c.mu.Unlock()
	c.applyAll(a)
}

func (c *testCluster) applyAll(a Assignment) {
	for id, r := range c.nodes {
		if err := r.Apply(a); err != nil && !strings.Contains(err.Error(), "no replica on this node") {
			c.t.Errorf("%s applies %+v: %v", id, a, err)
		}
	}
}

func (c *testCluster) assignment() Assignment {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.a
}

// write appends n records on the leader and waits for them to be
// acknowledged.
func (c *testCluster) write(ctx context.Context, leader string, n int) (int64, error) {
	r := c.nodes[leader]
	if err := r.BeforeWrite(ref0); err != nil {
		return 0, err
	}
	end := c.logs[leader].appendLeader(n, fmt.Sprintf("rows of %s", leader))
	return end, r.WaitAcked(ctx, ref0, end)
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 20s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling replicas' state: no event to wait on
	}
}

// Writes on the leader are acknowledged once both followers hold them;
// the followers store the leader's bytes and learn its high watermark.
func TestReplicationCopiesBytesAndAcks(t *testing.T) {
	c := newTestCluster(t, 5*time.Second, "a", "b", "c")
	c.elect("a", []string{"a", "b", "c"}, 2)
	ctx := context.Background()
	var end int64
	for i := range 20 {
		var err error
		if end, err = c.write(ctx, "a", 10+i); err != nil {
			t.Fatal(err)
		}
		// acknowledged means every in-sync replica holds it
		for _, id := range []string{"b", "c"} {
			if got := c.logs[id].Durable(); got < end {
				t.Fatalf("write %d acknowledged at %d while %s holds %d", i, end, id, got)
			}
		}
	}
	if hw := c.logs["a"].HighWatermark(); hw != end {
		t.Fatalf("leader's high watermark %d, want %d", hw, end)
	}
	waitCond(t, "followers learn the high watermark", func() bool {
		return c.logs["b"].HighWatermark() == end && c.logs["c"].HighWatermark() == end
	})
	want := c.logs["a"].bytesBelow(end)
	for _, id := range []string{"b", "c"} {
		if !bytes.Equal(c.logs[id].bytesBelow(end), want) {
			t.Fatalf("%s's log differs from the leader's", id)
		}
	}
}

// A follower that stops fetching leaves the in-sync set after the lag
// limit, and writes go on with the other; back, it catches up and rejoins.
func TestLaggingFollowerLeavesAndRejoins(t *testing.T) {
	c := newTestCluster(t, 200*time.Millisecond, "a", "b", "c")
	c.elect("a", []string{"a", "b", "c"}, 2)
	ctx := context.Background()
	if _, err := c.write(ctx, "a", 5); err != nil {
		t.Fatal(err)
	}
	c.nodes["c"].Remove(ref0) // c stops fetching
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	end, err := c.write(wctx, "a", 5)
	if err != nil {
		t.Fatalf("write with c gone: %v", err)
	}
	if isr := c.assignment().ISR; slices.Contains(isr, "c") {
		t.Fatalf("in-sync set %v still holds the stopped follower", isr)
	}
	if c.logs["b"].Durable() < end {
		t.Fatal("acknowledged before b held the write")
	}
	// c returns and catches up: it rejoins the in-sync set.
	if err := c.nodes["c"].Add(ref0, c.logs["c"]); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes["c"].Apply(c.assignment()); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "c rejoins the in-sync set", func() bool { return slices.Contains(c.assignment().ISR, "c") })
	if !bytes.Equal(c.logs["c"].bytesBelow(end), c.logs["a"].bytesBelow(end)) {
		t.Fatal("c's log differs from the leader's after catching up")
	}
}

// With min.insync.replicas 2 and only the leader in sync, writes are
// refused before they are appended.
func TestTooFewInSyncRefusesWrites(t *testing.T) {
	c := newTestCluster(t, 5*time.Second, "a", "b")
	c.tr.cut["a"] = true // b cannot fetch, so it cannot catch up and rejoin
	c.elect("a", []string{"a"}, 2)
	if _, err := c.write(context.Background(), "a", 1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("write with one in sync of two required: %v", err)
	}
	if c.logs["a"].Durable() != 0 {
		t.Fatal("a refused write was appended")
	}
	if _, err := c.write(context.Background(), "b", 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("write on a follower: %v", err)
	}
}

// The old leader wrote a tail no follower fetched; after a new leader of a
// higher epoch writes, the old leader follows it, cuts its divergent tail
// and ends byte-identical. Its unacknowledged write never was visible.
func TestDivergentTailIsTruncated(t *testing.T) {
	c := newTestCluster(t, 5*time.Second, "a", "b", "c")
	c.elect("a", []string{"a", "b", "c"}, 2)
	ctx := context.Background()
	acked, err := c.write(ctx, "a", 10)
	if err != nil {
		t.Fatal(err)
	}
	// a is cut off; it appends a batch that no one fetches.
	c.tr.mu.Lock()
	c.tr.cut["a"] = true
	c.tr.mu.Unlock()
	c.logs["a"].appendLeader(7, "lost tail")
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if err := c.nodes["a"].WaitAcked(wctx, ref0, acked+7); err == nil {
		t.Fatal("a write no follower held was acknowledged")
	}
	cancel()
	if hw := c.logs["a"].HighWatermark(); hw != acked {
		t.Fatalf("high watermark %d moved past the replicated %d", hw, acked)
	}
	// b is elected at epoch 2 from the in-sync set without a.
	c.elect("b", []string{"b", "c"}, 2)
	end, err := c.write(ctx, "b", 3)
	if err != nil {
		t.Fatal(err)
	}
	c.tr.mu.Lock()
	c.tr.cut["a"] = false
	c.tr.mu.Unlock()
	waitCond(t, "a truncates and catches up", func() bool {
		return bytes.Equal(c.logs["a"].bytesBelow(end), c.logs["b"].bytesBelow(end)) && c.logs["a"].Durable() == end
	})
	if got, _ := c.logs["a"].EndForEpoch(1); got != 1 {
		t.Fatalf("a's epoch history lost epoch 1: %d", got)
	}
	if _, e := c.logs["a"].EndForEpoch(1); e != acked {
		t.Fatalf("a's epoch 1 ends at %d, want %d (the tail cut)", e, acked)
	}
}

// Requests are fenced by the leader epoch.
func TestFetchFencedByEpoch(t *testing.T) {
	c := newTestCluster(t, 5*time.Second, "a", "b")
	c.elect("a", []string{"a", "b"}, 1)
	c.elect("a", []string{"a", "b"}, 1) // epoch 2
	r := c.nodes["a"]
	for _, tt := range []struct {
		epoch int32
		want  Code
	}{{1, CodeFencedEpoch}, {3, CodeUnknownEpoch}, {2, CodeOK}} {
		if got := r.fetch(context.Background(), FetchRequest{BucketRef: ref0, Epoch: tt.epoch, Follower: "b"}).Code; got != tt.want {
			t.Errorf("fetch at epoch %d: %s, want %s", tt.epoch, got, tt.want)
		}
	}
	if got := c.nodes["b"].fetch(context.Background(), FetchRequest{BucketRef: ref0, Epoch: 2, Follower: "a"}).Code; got != CodeNotLeader {
		t.Errorf("fetch from a follower: %s", got)
	}
	if got := r.fetch(context.Background(), FetchRequest{BucketRef: ref0, Epoch: 2, Offset: 99, Follower: "b"}).Code; got != CodeOutOfRange {
		t.Errorf("fetch past the end: %s", got)
	}
}
