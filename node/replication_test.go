package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/pgtest"
)

// testCluster is nodes of one process sharing a metadata store (a SQLite
// file: nodes on one host may share one).
type testCluster struct {
	t     testing.TB
	meta  string
	seed  string
	nodes map[string]*clusterNode
	// tweak, when set, changes a node's configuration before it starts.
	tweak func(id string, cfg *Config)
}

type clusterNode struct {
	n    *Node
	stop context.CancelFunc
	done chan error
}

func newTestCluster(t testing.TB, ids ...string) *testCluster {
	return newTestClusterOn(t, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"), ids...)
}

// newTestClusterOn starts nodes whose metadata store is metaURI.
func newTestClusterOn(t testing.TB, metaURI string, ids ...string) *testCluster {
	return newTestClusterWith(t, metaURI, nil, ids...)
}

// newTestClusterWith starts nodes whose configuration edit changes.
func newTestClusterWith(t testing.TB, metaURI string, edit func(*Config), ids ...string) *testCluster {
	c := &testCluster{t: t, meta: metaURI, nodes: map[string]*clusterNode{}}
	if edit != nil {
		c.tweak = func(_ string, cfg *Config) { edit(cfg) }
	}
	for _, id := range ids {
		c.start(id, t.TempDir())
	}
	c.waitMembers(len(ids))
	return c
}

func (c *testCluster) start(id, dir string) *clusterNode {
	cfg := quietConfig(dir)
	cfg.Cluster = ClusterConfig{NodeID: id, Gossip: freeLoopbackAddr(c.t), GossipTiming: "local", Meta: c.meta}
	if c.seed != "" {
		cfg.Cluster.Join = []string{c.seed}
	} else {
		c.seed = cfg.Cluster.Gossip
	}
	if c.tweak != nil {
		c.tweak(id, &cfg)
	}
	n, stop, served := startNodeWith(c.t, cfg)
	// done gives Serve's result to the test, which may wait for it, and
	// the cleanup waits too: the directories go only once the node is
	// closed.
	done := make(chan error, 1)
	closed := make(chan struct{})
	go func() { err := <-served; done <- err; close(closed) }()
	cn := &clusterNode{n, stop, done}
	c.nodes[id] = cn
	c.t.Cleanup(func() { stop(); <-closed })
	return cn
}

// waitMembers waits until every running node sees want members alive.
func (c *testCluster) waitMembers(want int) {
	waitUntil(c.t, func() bool {
		for _, cn := range c.nodes {
			if len(cn.n.Members().Live()) != want {
				return false
			}
		}
		return true
	})
}

// exec runs DDL: on one node when the cluster shares a catalog (its
// metadata store is PostgreSQL), else on every node, each of which has a
// catalog of its own where the same statements give the same table ids.
func (c *testCluster) exec(sqls ...string) {
	if strings.HasPrefix(c.meta, "postgres") {
		mustExec(c.t, client(c.t, c.nodes["n1"].n.Addr()), sqls...)
		return
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		if cn := c.nodes[id]; cn != nil {
			mustExec(c.t, client(c.t, cn.n.Addr()), sqls...)
		}
	}
}

// bucket is the stored state of bucket 0 of table 1.
func (c *testCluster) bucket(on string) meta.Bucket {
	b, err := c.nodes[on].n.repl.store.Bucket(context.Background(), cluster.BucketRef{TableID: 1})
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// A write on a bucket's leader is acknowledged once the in-sync replicas
// hold it, every replica then holds the same bytes and serves the rows, a
// write on a follower is refused naming the leader, and when the leader
// leaves, another replica leads and no acknowledged row is lost.
func TestClusterReplicatesWrites(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')")
	b := c.bucket("n1")
	if len(b.Replicas) != 3 || len(b.ISR) != 3 || b.Leader == "" {
		t.Fatalf("bucket placed as %+v: want 3 replicas, all in sync, one leading", b)
	}
	t.Logf("bucket placed: %+v", b)
	leader := c.nodes[b.Leader]
	var followers []string
	for _, id := range b.Replicas {
		if id != b.Leader {
			followers = append(followers, id)
		}
	}
	acked := 0
	for i := range 20 {
		mustExec(t, client(t, leader.n.Addr()), fmt.Sprintf("INSERT INTO t SELECT range + %d, 'v' FROM range(10)", i*10))
		acked += 10
	}
	// Acknowledged: at least min.insync.replicas (2) hold it; soon all do,
	// and each serves every row (reads stop at the high watermark).
	for _, id := range followers {
		cl := client(t, c.nodes[id].n.Addr())
		waitUntil(t, func() bool { return queryInt64(t, cl, "SELECT count(*) FROM t") == int64(acked) })
	}
	// An idempotent writer's call, acknowledged by the leader.
	idem := func(seq int32) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "lakestream-writer-id", "77", "lakestream-writer-seq", strconv.Itoa(int(seq)))
	}
	if _, err := client(t, leader.n.Addr()).ExecuteUpdate(idem(0), "INSERT INTO t SELECT range + 500, 'i' FROM range(3)"); err != nil {
		t.Fatal(err)
	}
	acked += 3
	for _, id := range followers {
		cl := client(t, c.nodes[id].n.Addr())
		waitUntil(t, func() bool { return queryInt64(t, cl, "SELECT count(*) FROM t") == int64(acked) })
	}
	c.sameBytes(b.Replicas)

	// lakestream.buckets shows the bucket as the store holds it and this
	// node's replica of it.
	const bq = "SELECT table_name, bucket, leader, leader_epoch, array_to_string(isr, ','), under_replicated, local_role, local_high_watermark FROM lakestream.buckets"
	isr := strings.Join(b.ISR, ",")
	if got := queryRows(t, client(t, leader.n.Addr()), bq); len(got) != 1 || got[0] != fmt.Sprintf("default.t|0|%s|%d|%s|false|leader|%d", b.Leader, b.Epoch, isr, acked) {
		t.Errorf("lakestream.buckets on the leader: %q", got)
	}
	if got := queryRows(t, client(t, c.nodes[followers[0]].n.Addr()), bq); len(got) != 1 || got[0] != fmt.Sprintf("default.t|0|%s|%d|%s|false|follower|%d", b.Leader, b.Epoch, isr, acked) {
		t.Errorf("lakestream.buckets on a follower: %q", got)
	}

	// A follower forwards a write to the leader (forward.go).
	if n, err := client(t, c.nodes[followers[0]].n.Addr()).ExecuteUpdate(context.Background(), "INSERT INTO t VALUES (-1, 'x')"); err != nil || n != 1 {
		t.Fatalf("write on a follower: %d rows, %v; want it forwarded to leader %s", n, err, b.Leader)
	}
	acked++

	// The leader leaves; a follower leads at a higher epoch and takes
	// writes; nothing acknowledged is lost.
	leader.stop()
	if err := <-leader.done; err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, b.Leader)
	var next meta.Bucket
	waitUntil(t, func() bool {
		next = c.bucket(followers[0])
		return next.Leader != "" && next.Leader != b.Leader
	})
	t.Logf("after %s left: %+v", b.Leader, next)
	// The leader handed its leadership off before it stopped (still in
	// sync then); the controller takes it out of the in-sync set once it
	// has gone.
	var got []string
	waitUntil(t, func() bool {
		got = queryRows(t, client(t, c.nodes[next.Leader].n.Addr()), "SELECT leader, under_replicated FROM lakestream.buckets")
		return len(got) == 1 && got[0] == next.Leader+"|true"
	})
	if next.Epoch <= b.Epoch {
		t.Fatalf("new leader at epoch %d, the old one's was %d", next.Epoch, b.Epoch)
	}
	// The new leader may refuse writes until it has applied its
	// assignment; a client retries an Unavailable.
	waitUntil(t, func() bool {
		_, err := client(t, c.nodes[next.Leader].n.Addr()).ExecuteUpdate(context.Background(), "INSERT INTO t SELECT range + 1000, 'w' FROM range(5)")
		return err == nil
	})
	acked += 5
	// The writer's retry of its acknowledged call, sent to the new leader
	// (as a client does that did not hear the answer), stores nothing; its
	// next call stores its rows.
	newLeader := client(t, c.nodes[next.Leader].n.Addr())
	if _, err := newLeader.ExecuteUpdate(idem(0), "INSERT INTO t SELECT range + 500, 'i' FROM range(3)"); err != nil {
		t.Fatalf("retry on the new leader: %v", err)
	}
	if _, err := newLeader.ExecuteUpdate(idem(1), "INSERT INTO t SELECT range + 600, 'i' FROM range(2)"); err != nil {
		t.Fatal(err)
	}
	acked += 2
	for _, id := range followers {
		cl := client(t, c.nodes[id].n.Addr())
		waitUntil(t, func() bool { return queryInt64(t, cl, "SELECT count(*) FROM t") >= int64(acked) })
		if got := queryRows(t, cl, "SELECT count(*), count(DISTINCT id) FROM t"); got[0] != fmt.Sprintf("%d|%d", acked, acked) {
			t.Fatalf("%s: rows|distinct ids %s, want %d of each", id, got[0], acked)
		}
	}
	c.sameBytes(followers)
}

// sameBytes checks that the replicas on the nodes ids hold the same bytes
// at the same offsets up to the least high watermark.
func (c *testCluster) sameBytes(ids []string) {
	c.t.Helper()
	var want []byte
	var wantFrom string
	hw := int64(-1)
	logs := map[string]cluster.Log{}
	for _, id := range ids {
		tb, err := c.nodes[id].n.Tables().ByID(context.Background(), 1)
		if err != nil {
			c.t.Fatal(err)
		}
		l := cluster.BucketLog(tb.Log(), 0)
		logs[id] = l
		if h := l.HighWatermark(); hw < 0 || h < hw {
			hw = h
		}
	}
	for _, id := range ids {
		var got []byte
		for from := int64(0); from < hw; {
			b, err := logs[id].Read(from, 1<<20)
			if err != nil {
				c.t.Fatalf("%s: read from %d: %v", id, from, err)
			}
			if len(b) == 0 {
				c.t.Fatalf("%s: nothing from %d below the watermark %d", id, from, hw)
			}
			// Whole batches below the watermark only: above it the
			// replicas may differ (a tail not yet acknowledged).
			for rest := b; len(rest) > 0 && from < hw; {
				batch := columnarlog.Batch(rest)
				got = append(got, rest[:batch.Size()]...)
				from, rest = batch.NextOffset(), rest[batch.Size():]
			}
		}
		if want == nil {
			want, wantFrom = got, id
			continue
		}
		if !bytes.Equal(got, want) {
			c.t.Fatalf("replicas %s and %s differ below the high watermark %d (%d and %d bytes)", wantFrom, id, hw, len(want), len(got))
		}
	}
}

// With the metadata store on PostgreSQL the nodes share one catalog: a
// table created on one node is opened on the others and replicated, one
// dropped on another node goes everywhere with its data, and a node that
// was down when a table was created starts with an empty replica of it
// that its leader fills.
func TestClusterSharesTables(t *testing.T) {
	pg := pgtest.ForTest(t, pgtest.Options{})
	uri, err := pg.CreateDatabase(context.Background(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClusterOn(t, uri, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '2')")
	for _, id := range []string{"n1", "n2", "n3"} {
		waitUntil(t, func() bool { _, err := c.nodes[id].n.Tables().Get(context.Background(), "", "t"); return err == nil })
	}
	// Every node leads some bucket or none; a write goes to a leader of
	// each bucket: the nodes that lead write rows of their own.
	leaders := map[string]bool{}
	for b := range 2 {
		st, err := c.nodes["n1"].n.repl.store.Bucket(context.Background(), cluster.BucketRef{TableID: 1, Bucket: int32(b)})
		if err != nil {
			t.Fatal(err)
		}
		leaders[st.Leader] = true
		waitUntil(t, func() bool { return c.nodes[st.Leader].n.repl.Leads(1, b) })
	}
	rows := 0
	for id := range leaders {
		mustExec(t, client(t, c.nodes[id].n.Addr()), "INSERT INTO t SELECT range, '"+id+"' FROM range(100)")
		rows += 100
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		cl := client(t, c.nodes[id].n.Addr())
		waitUntil(t, func() bool { return queryInt64(t, cl, "SELECT count(*) FROM t") == int64(rows) })
	}
	// n3 goes down; a table created meanwhile reaches it when it returns.
	n3 := c.nodes["n3"]
	dir := n3.n.cfg.DataDir
	n3.stop()
	if err := <-n3.done; err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, "n3")
	c.exec("CREATE TABLE u (id BIGINT) WITH ('bucket.num' = '1', 'min.insync.replicas' = '1')")
	st, err := c.nodes["n1"].n.repl.store.Bucket(context.Background(), cluster.BucketRef{TableID: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return c.nodes[st.Leader].n.repl.Leads(2, 0) })
	mustExec(t, client(t, c.nodes[st.Leader].n.Addr()), "INSERT INTO u SELECT range FROM range(50)")
	c.start("n3", dir)
	cl3 := client(t, c.nodes["n3"].n.Addr())
	if slicesContains(st.Replicas, "n3") {
		waitUntil(t, func() bool { return queryInt64(t, cl3, "SELECT count(*) FROM u") == 50 })
	}
	// A DROP on n2 drops t on every node, its data with it.
	mustExec(t, client(t, c.nodes["n2"].n.Addr()), "DROP TABLE t")
	for _, id := range []string{"n1", "n2", "n3"} {
		n := c.nodes[id].n
		waitUntil(t, func() bool {
			_, err := os.Stat(filepath.Join(n.cfg.DataDir, "tables", "1"))
			return os.IsNotExist(err)
		})
		if _, err := n.Tables().ByID(context.Background(), 1); err == nil {
			t.Errorf("%s: the dropped table is still open", id)
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A node without a replica of a bucket (bucket.replicas below the nodes)
// forwards a write to the leader the metadata store holds.
func TestClusterNonReplicaForwards(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (id BIGINT) WITH ('bucket.num' = '1', 'bucket.replicas' = '1', 'min.insync.replicas' = '1')")
	var b meta.Bucket
	waitUntil(t, func() bool { b = c.bucket("n1"); return b.Leader != "" })
	if len(b.Replicas) != 1 {
		t.Fatalf("bucket placed as %+v: want one replica", b)
	}
	mustExec(t, client(t, c.nodes[b.Leader].n.Addr()), "INSERT INTO t VALUES (1)")
	want := int64(1)
	for id, cn := range c.nodes {
		if id == b.Leader {
			continue
		}
		if n, err := client(t, cn.n.Addr()).ExecuteUpdate(context.Background(), "INSERT INTO t VALUES (2)"); err != nil || n != 1 {
			t.Errorf("write on %s, which holds no replica: %d rows, %v; want it forwarded to leader %s", id, n, err, b.Leader)
		}
		want++
		// It reads the bucket from its leader (docs/cluster.md,
		// "Distributed queries").
		if got := queryInt64(t, client(t, cn.n.Addr()), "SELECT count(*) FROM t"); got != want {
			t.Errorf("%s, which holds no replica, serves %d rows, want the leader's %d", id, got, want)
		}
	}
	if got := queryInt64(t, client(t, c.nodes[b.Leader].n.Addr()), "SELECT count(*) FROM t"); got != want {
		t.Errorf("the leader holds %d rows, want %d", got, want)
	}
}
