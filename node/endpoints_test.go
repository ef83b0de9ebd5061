package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster/meta"
)

// spreadCluster is three nodes and a table t of six buckets with one
// replica each, spread over the three, holding rows ids 0..rows-1 written
// on every node (each node writes to the buckets it leads). It returns
// the buckets' leaders.
func spreadCluster(t testing.TB, rows int) (*testCluster, map[int]string) {
	c := newTestCluster(t, "n1", "n2", "n3")
	return c, spreadTable(t, c, rows, "")
}

// spreadTable creates t on c (with the extra options, if any) and fills
// it; see spreadCluster.
func spreadTable(t testing.TB, c *testCluster, rows int, options string) map[int]string {
	// Placement takes the nodes alive to gossip and holding their node
	// lease.
	waitUntil(t, func() bool {
		for id := range c.nodes {
			if !c.nodes["n1"].n.repl.alive(id) {
				return false
			}
		}
		return true
	})
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '6', 'bucket.replicas' = '1', 'min.insync.replicas' = '1'" + options + ")")
	var bs []meta.Bucket
	waitUntil(t, func() bool {
		var err error
		bs, err = c.nodes["n1"].n.repl.store.Buckets(context.Background(), 1)
		if err != nil || len(bs) != 6 {
			return false
		}
		for _, b := range bs {
			if b.Leader == "" {
				return false
			}
		}
		return true
	})
	leaders := map[int]string{}
	led := map[string]bool{}
	for _, b := range bs {
		leaders[int(b.Key.Bucket)] = b.Leader
		led[b.Leader] = true
	}
	if len(led) != 3 {
		t.Fatalf("buckets placed on %v: want all three nodes", leaders)
	}
	// Each node leads its buckets once its replicas are open.
	waitUntil(t, func() bool {
		for b, id := range leaders {
			if !c.nodes[id].n.repl.Leads(1, b) {
				return false
			}
		}
		return true
	})
	per := rows / 3
	for i, id := range []string{"n1", "n2", "n3"} {
		n := per
		if i == 2 {
			n = rows - 2*per
		}
		mustExec(t, client(t, c.nodes[id].n.Addr()), fmt.Sprintf("INSERT INTO t SELECT range + %d, '%s' FROM range(%d)", i*per, id, n))
	}
	return leaders
}

// uriOf is the Flight location of a test node.
func uriOf(n *Node) string { return "grpc+tcp://" + n.Addr() }

// readEndpoint reads one endpoint from its location, every id in it.
func readEndpoint(t testing.TB, ep *flight.FlightEndpoint) []int64 {
	t.Helper()
	if len(ep.Location) != 1 {
		t.Fatalf("endpoint with locations %v: want one", ep.Location)
	}
	cl := client(t, strings.TrimPrefix(ep.Location[0].Uri, "grpc+tcp://"))
	rdr, err := cl.DoGet(context.Background(), ep.Ticket)
	if err != nil {
		t.Fatalf("DoGet at %s: %v", ep.Location[0].Uri, err)
	}
	defer rdr.Release()
	var ids []int64
	for rdr.Next() {
		ids = append(ids, rdr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("read at %s: %v", ep.Location[0].Uri, err)
	}
	return ids
}

// A scan planned on one node of a table spread over three lists an
// endpoint located at each node that serves buckets; read from their
// locations they give every row once. A ticket taken to a node without
// its buckets is refused Unavailable, naming the node that serves them.
func TestClusterEndpointsSpread(t *testing.T) {
	const rows = 3000
	c, leaders := spreadCluster(t, rows)
	for _, on := range []string{"n1", "n3"} {
		info, err := client(t, c.nodes[on].n.Addr()).Execute(context.Background(), "SELECT id FROM t")
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]int{}
		seen := make([]int, rows)
		for _, ep := range info.Endpoint {
			at[ep.Location[0].Uri]++
			for _, id := range readEndpoint(t, ep) {
				seen[id]++
			}
		}
		for _, id := range []string{"n1", "n2", "n3"} {
			if at[uriOf(c.nodes[id].n)] == 0 {
				t.Errorf("planned on %s: no endpoint at %s (%s); endpoints at %v", on, id, uriOf(c.nodes[id].n), at)
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("planned on %s: id %d read %d times", on, id, n)
			}
		}
		// The wrong node refuses, naming the right one.
		for _, ep := range info.Endpoint {
			uri := ep.Location[0].Uri
			owner := ""
			for id, cn := range c.nodes {
				if uriOf(cn.n) == uri {
					owner = id
				}
			}
			wrong := map[string]string{"n1": "n2", "n2": "n3", "n3": "n1"}[owner]
			_, err := readAll(client(t, c.nodes[wrong].n.Addr()), ep.Ticket)
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "read it from node "+owner+" at "+uri) {
				t.Errorf("ticket of %s read on %s: %v; want Unavailable naming %s at %s", owner, wrong, err, owner, uri)
			}
		}
	}
	t.Logf("buckets' leaders: %v", leaders)
}

// readAll reads a ticket on cl to its end and returns the rows read.
func readAll(cl *flightsql.Client, tk *flight.Ticket) (int64, error) {
	rdr, err := cl.DoGet(context.Background(), tk)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

// With --follower-reads a node plans every bucket it holds in sync on
// itself; without, on the buckets' leaders. Both read every row once.
func TestClusterFollowerReads(t *testing.T) {
	c := &testCluster{t: t, meta: "sqlite://" + t.TempDir() + "/meta.db", nodes: map[string]*clusterNode{},
		tweak: func(id string, cfg *Config) { cfg.Cluster.FollowerReads = id == "n1" }}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id, t.TempDir())
	}
	c.waitMembers(3)
	c.exec("CREATE TABLE t (id BIGINT) WITH ('bucket.num' = '4', 'bucket.replicas' = '3', 'min.insync.replicas' = '3')")
	var bs []meta.Bucket
	waitUntil(t, func() bool {
		bs, _ = c.nodes["n1"].n.repl.store.Buckets(context.Background(), 1)
		if len(bs) != 4 {
			return false
		}
		for _, b := range bs {
			if b.Leader == "" || len(b.ISR) != 3 || !c.nodes[b.Leader].n.repl.Leads(1, int(b.Key.Bucket)) {
				return false
			}
		}
		return true
	})
	led := map[string]bool{}
	for _, b := range bs {
		led[b.Leader] = true
	}
	if !led["n2"] && !led["n3"] {
		t.Fatalf("leaders %v: want buckets led off n1, or follower reads change nothing", led)
	}
	next := 0
	for id := range led {
		mustExec(t, client(t, c.nodes[id].n.Addr()), fmt.Sprintf("INSERT INTO t SELECT range + %d FROM range(100)", next))
		next += 100
	}
	// Every replica serves the rows once its high watermark has them.
	for _, id := range []string{"n1", "n2"} {
		cl := client(t, c.nodes[id].n.Addr())
		waitUntil(t, func() bool { return queryInt64(t, cl, "SELECT count(*) FROM t") == int64(next) })
	}
	for _, tc := range []struct {
		on   string
		want func(b meta.Bucket) string // the node an endpoint of b is located at
	}{
		{"n1", func(meta.Bucket) string { return "n1" }},
		{"n2", func(b meta.Bucket) string { return b.Leader }},
	} {
		info, err := client(t, c.nodes[tc.on].n.Addr()).Execute(context.Background(), "SELECT id FROM t")
		if err != nil {
			t.Fatal(err)
		}
		wantAt := map[string]bool{}
		for _, b := range bs {
			wantAt[uriOf(c.nodes[tc.want(b)].n)] = true
		}
		seen := map[int64]int{}
		for _, ep := range info.Endpoint {
			if !wantAt[ep.Location[0].Uri] {
				t.Errorf("planned on %s: an endpoint at %s, want only %v", tc.on, ep.Location[0].Uri, wantAt)
			}
			for _, id := range readEndpoint(t, ep) {
				seen[id]++
			}
		}
		if len(seen) != next {
			t.Errorf("planned on %s: %d distinct ids, want %d", tc.on, len(seen), next)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("planned on %s: id %d read %d times", tc.on, id, n)
			}
		}
	}
}

// Each node tiers its buckets into a lake of its own: with one replica a
// bucket, a node's lake holds rows of its buckets alone, and a scan
// planned on any node reads each node's lake files and log tail from
// that node, every row once.
func TestClusterEndpointsWithLakes(t *testing.T) {
	c := &testCluster{t: t, meta: "sqlite://" + t.TempDir() + "/meta.db", nodes: map[string]*clusterNode{},
		tweak: func(_ string, cfg *Config) { cfg.Tiering = TieringBackground }}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id, t.TempDir())
	}
	c.waitMembers(3)
	const rows = 3000
	spreadTable(t, c, rows, ", 'datalake.freshness' = '200ms'")
	// Wait until every node's lake holds its rows.
	waitUntil(t, func() bool {
		for _, cn := range c.nodes {
			tb, _, err := cn.n.store.Resolve(context.Background(), "default", "t")
			if err != nil {
				return false
			}
			v, err := tb.Capture(context.Background(), 0)
			if err != nil || v.Lake.ID == 0 {
				return false
			}
		}
		return true
	})
	for _, id := range []string{"n1", "n2", "n3"} {
		mustExec(t, client(t, c.nodes[id].n.Addr()), fmt.Sprintf("INSERT INTO t SELECT range + %d, 'tail' FROM range(10)", rows+map[string]int{"n1": 0, "n2": 10, "n3": 20}[id]))
	}
	for _, on := range []string{"n1", "n2"} {
		info, err := client(t, c.nodes[on].n.Addr()).Execute(context.Background(), "SELECT id FROM t")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]int{}
		for _, ep := range info.Endpoint {
			for _, id := range readEndpoint(t, ep) {
				seen[id]++
			}
		}
		if len(seen) != rows+30 {
			t.Errorf("planned on %s: %d distinct ids, want %d", on, len(seen), rows+30)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("planned on %s: id %d read %d times", on, id, n)
			}
		}
	}
}
