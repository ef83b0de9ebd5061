package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/lakestream/lakestream/cluster/meta"
)

// resumingSubscriber follows a table's changes over a cluster as a client
// does (docs/flight.md, "Subscriptions across failover"): it plans
// changes() from its positions on a live node, reads every endpoint from
// its location, checks that each bucket's offsets come one after the
// other, and when a stream fails plans again from the offsets after the
// last rows it got, on the next live node.
type resumingSubscriber struct {
	t     *testing.T
	nodes func() []string // live nodes' Flight addresses
	mu    struct {
		sync.Mutex
		pos     map[int]int64 // next offset per bucket
		ids     map[int64]int // id -> times received
		resumed int
	}
}

func (s *resumingSubscriber) run(ctx context.Context) {
	for try := 0; ctx.Err() == nil; try++ {
		addrs := s.nodes()
		addr := addrs[try%len(addrs)]
		err := s.once(ctx, addr)
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.mu.resumed++
		s.mu.Unlock()
		s.t.Logf("subscription on %s ended: %v; resuming", addr, err)
	}
}

// once plans on addr and reads until a stream fails.
func (s *resumingSubscriber) once(ctx context.Context, addr string) error {
	s.mu.Lock()
	var start []string
	for b, o := range s.mu.pos {
		start = append(start, fmt.Sprintf("%d:%d", b, o))
	}
	s.mu.Unlock()
	cl := client(s.t, addr)
	info, err := cl.Execute(ctx, fmt.Sprintf("SELECT id, _bucket, _offset FROM changes('default.s', '%s', 1)", strings.Join(start, ",")))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, len(info.Endpoint))
	for _, ep := range info.Endpoint {
		go func() { errc <- s.read(ctx, ep) }()
	}
	err = <-errc // the first stream to fail ends them all
	cancel()
	// The others may still be recording a batch: the next plan starts
	// from the positions once they all have stopped.
	for range len(info.Endpoint) - 1 {
		<-errc
	}
	return err
}

func (s *resumingSubscriber) read(ctx context.Context, ep *flight.FlightEndpoint) error {
	cl := client(s.t, strings.TrimPrefix(ep.Location[0].Uri, "grpc+tcp://"))
	rdr, err := cl.DoGet(ctx, ep.Ticket)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids := rec.Column(0).(*array.Int64).Int64Values()
		buckets := rec.Column(1).(*array.Int32).Int32Values()
		offs := rec.Column(2).(*array.Int64).Int64Values()
		s.mu.Lock()
		for i := range ids {
			b := int(buckets[i])
			if offs[i] != s.mu.pos[b] {
				s.t.Errorf("bucket %d: offset %d after %d: a gap or a duplicate", b, offs[i], s.mu.pos[b]-1)
			}
			s.mu.pos[b] = offs[i] + 1
			s.mu.ids[ids[i]]++
		}
		s.mu.Unlock()
	}
	if err := rdr.Err(); err != nil {
		return err
	}
	return fmt.Errorf("stream ended")
}

func (s *resumingSubscriber) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.ids)
}

// A subscription whose bucket's leader stops resumes, from the offsets
// after the last rows delivered, on the bucket's new leader: every row
// stored is delivered once, before and after, with no gap in any
// bucket's offsets. With follower reads, a subscription planned on a
// follower is served there and goes on through the leader's stop without
// resuming.
func TestClusterSubscriptionAcrossFailover(t *testing.T) {
	t.Run("leaders", func(t *testing.T) { subscriptionAcrossFailover(t, false) })
	t.Run("follower-reads", func(t *testing.T) { subscriptionAcrossFailover(t, true) })
}

func subscriptionAcrossFailover(t *testing.T, followerReads bool) {
	c := &testCluster{t: t, meta: "sqlite://" + t.TempDir() + "/meta.db", nodes: map[string]*clusterNode{},
		tweak: func(_ string, cfg *Config) { cfg.Cluster.FollowerReads = followerReads }}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id, t.TempDir())
	}
	c.waitMembers(3)
	c.exec("CREATE TABLE s (id BIGINT) WITH ('bucket.num' = '2', 'bucket.replicas' = '3', 'min.insync.replicas' = '2')")
	store := c.nodes["n1"].n.repl.store
	leaders := func() []meta.Bucket {
		bs, err := store.Buckets(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		return bs
	}
	var mu sync.Mutex
	live := []string{"n1", "n2", "n3"}
	addrs := map[string]string{}
	for id, cn := range c.nodes {
		addrs[id] = cn.n.Addr()
	}
	sub := &resumingSubscriber{t: t, nodes: func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, id := range live {
			out = append(out, addrs[id])
		}
		return out
	}}
	sub.mu.pos = map[int]int64{0: 0, 1: 0}
	sub.mu.ids = map[int64]int{}
	// write stores ids [from, from+n) on the buckets' leaders, retrying
	// while a leadership moves.
	next := int64(0)
	write := func(n int64) {
		waitUntil(t, func() bool {
			bs := leaders()
			led := map[string]bool{}
			for _, b := range bs {
				led[b.Leader] = b.Leader != ""
			}
			for id, ok := range led {
				if !ok {
					return false
				}
				if _, err := client(t, addrs[id]).ExecuteUpdate(context.Background(),
					fmt.Sprintf("INSERT INTO s SELECT range + %d FROM range(%d)", next, n)); err != nil {
					return false
				}
				next += n
			}
			return true
		})
	}
	waitUntil(t, func() bool {
		for _, b := range leaders() {
			if b.Leader == "" || !c.nodes[b.Leader].n.repl.Leads(1, int(b.Key.Bucket)) {
				return false
			}
		}
		return true
	})
	gone := leaders()[0].Leader
	if followerReads {
		// Subscribe on a follower of bucket 0 only: it plans every
		// bucket on itself.
		mu.Lock()
		live = []string{slicesWithout(live, gone)[0]}
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sub.run(ctx) }()
	defer func() { cancel(); <-done }()
	write(100)
	waitUntil(t, func() bool { return sub.received() == int(next) })
	// The leader of bucket 0 stops.
	mu.Lock()
	live = slicesWithout(live, gone)
	mu.Unlock()
	c.nodes[gone].stop()
	if err := <-c.nodes[gone].done; err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, gone)
	for range 3 {
		write(50)
	}
	waitUntil(t, func() bool { return sub.received() == int(next) })
	mu.Lock()
	reader := live[0]
	mu.Unlock()
	total := queryInt64(t, client(t, addrs[reader]), "SELECT count(*) FROM s")
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if total != next || len(sub.mu.ids) != int(next) {
		t.Fatalf("stored %d rows, wrote %d, received %d distinct", total, next, len(sub.mu.ids))
	}
	for id, n := range sub.mu.ids {
		if n != 1 {
			t.Errorf("id %d received %d times", id, n)
		}
	}
	switch {
	case !followerReads && sub.mu.resumed == 0:
		t.Error("the subscription never resumed: the stopped leader served none of it")
	case followerReads && sub.mu.resumed > 0:
		t.Errorf("the subscription on a follower resumed %d times: it should have gone on", sub.mu.resumed)
	}
	t.Logf("%d rows received once each across %s stopping; resumed %d times", next, gone, sub.mu.resumed)
}

func slicesWithout(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
