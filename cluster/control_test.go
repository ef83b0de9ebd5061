package cluster

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

// liveSet is the test's membership: who is alive.
type liveSet struct {
	mu   sync.Mutex
	dead map[string]bool
}

func (l *liveSet) alive(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.dead[id]
}

func (l *liveSet) set(id string, alive bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead[id] = !alive
}

// A bucket placed on three nodes with a shared metadata store and a
// controller on every node: writes are acknowledged while the leader
// lives; killed, a new leader is elected from the in-sync replicas and
// writes go on; back, the old leader cuts its unacknowledged tail and
// rejoins. No acknowledged write is lost, and the replicas end
// byte-identical.
func TestFailoverKeepsAcknowledgedWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := meta.NewMem(meta.Options{})
	live := &liveSet{dead: map[string]bool{}}
	tr := &directTransport{nodes: map[string]*Replicas{}, cut: map[string]bool{}}
	ids := []string{"a", "b", "c"}
	logs := map[string]*memLog{}
	nodes := map[string]*Replicas{}
	ref := BucketRef{TableID: 9, Bucket: 0}
	placed := Place(ref, 3, []membership.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err := store.CreateBuckets(ctx, []meta.Bucket{placed}); err != nil {
		t.Fatal(err)
	}
	start := func(id string) context.CancelFunc {
		h := store.Handle()
		r, err := NewReplicas(Config{NodeID: id, ReplicaLagMax: 500 * time.Millisecond, FetchMaxWait: 50 * time.Millisecond,
			RetryBackoff: 5 * time.Millisecond, RetryBackoffMax: 20 * time.Millisecond, Logger: testLogger}, tr, StoreISRChange(h, id))
		if err != nil {
			t.Fatal(err)
		}
		if logs[id] == nil {
			logs[id] = newMemLog()
		}
		r.Add(ref, logs[id])
		tr.mu.Lock()
		tr.nodes[id], tr.cut[id] = r, false
		tr.mu.Unlock()
		nodes[id] = r
		nctx, stop := context.WithCancel(ctx)
		ctl := &Controller{Self: id, Store: h, Alive: live.alive, LeaseTTL: time.Second, Every: 20 * time.Millisecond, Logger: testLogger}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); ctl.Run(nctx) }()
		go func() {
			defer wg.Done()
			Watch(nctx, h, r, func(meta.Bucket) int { return 2 }, func(id string) string { return id }, 10*time.Millisecond, nil)
		}()
		return func() { stop(); wg.Wait(); r.Close() }
	}
	stops := map[string]context.CancelFunc{}
	for _, id := range ids {
		stops[id] = start(id)
	}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	leaderOf := func() meta.Bucket {
		b, err := store.Bucket(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// write appends on whoever leads now and waits for the acknowledgement.
	var acked int64
	write := func(n int) error {
		b := leaderOf()
		if b.Leader == "" {
			return ErrNotLeader
		}
		r := nodes[b.Leader]
		if err := r.BeforeWrite(ref); err != nil {
			return err
		}
		end := logs[b.Leader].appendLeader(n, "w")
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := r.WaitAcked(wctx, ref, end); err != nil {
			return err
		}
		acked = max(acked, end)
		return nil
	}
	retryWrite := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := write(n)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("write not acknowledged in 20s: %v", err)
			}
			time.Sleep(5 * time.Millisecond) // waiting for an election: no event to wait on
		}
	}
	for range 10 {
		retryWrite(10)
	}
	first := leaderOf()
	old := first.Leader
	// The leader is killed: unreachable, not alive, and its replicas stop.
	tr.mu.Lock()
	tr.cut[old] = true
	tr.mu.Unlock()
	live.set(old, false)
	stops[old]()
	delete(stops, old)
	// It had appended a tail no one fetched.
	logs[old].appendLeader(3, "never acknowledged")
	for range 10 {
		retryWrite(10)
	}
	now := leaderOf()
	if now.Leader == old || now.Epoch <= first.Epoch {
		t.Fatalf("after the leader died: %+v (was %+v)", now, first)
	}
	// It comes back: it follows, cuts its tail and rejoins the in-sync set.
	live.set(old, true)
	stops[old] = start(old)
	retryWrite(10)
	waitCond(t, "the old leader rejoins the in-sync set", func() bool { return slices.Contains(leaderOf().ISR, old) })
	end := logs[leaderOf().Leader].Durable()
	want := logs[leaderOf().Leader].bytesBelow(end)
	if end < acked {
		t.Fatalf("the leader's log ends at %d, below the acknowledged %d", end, acked)
	}
	for _, id := range ids {
		waitCond(t, id+" holds the leader's log", func() bool { return bytes.Equal(logs[id].bytesBelow(end), want) })
	}
	if errors.Is(write(1), ErrNotLeader) {
		t.Fatal("no leader at the end")
	}
}
