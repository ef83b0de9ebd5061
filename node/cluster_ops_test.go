package node

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// newHTTPCluster starts nodes as newTestCluster does, each serving HTTP
// (status page, /status.json, /metrics) on a loopback port.
func newHTTPCluster(t testing.TB, ids ...string) *testCluster {
	c := &testCluster{t: t, meta: "sqlite://" + filepath.Join(t.TempDir(), "meta.db"), nodes: map[string]*clusterNode{}}
	for _, id := range ids {
		cfg := quietConfig(t.TempDir())
		cfg.HTTP = "127.0.0.1:0"
		cfg.Cluster = ClusterConfig{NodeID: id, Gossip: freeLoopbackAddr(t), GossipTiming: "local", Meta: c.meta}
		if c.seed != "" {
			cfg.Cluster.Join = []string{c.seed}
		} else {
			c.seed = cfg.Cluster.Gossip
		}
		n, stop, served := startNodeWith(t, cfg)
		done, closed := make(chan error, 1), make(chan struct{})
		go func() { err := <-served; done <- err; close(closed) }()
		c.nodes[id] = &clusterNode{n, stop, done}
		t.Cleanup(func() { stop(); <-closed })
	}
	c.waitMembers(len(ids))
	return c
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricSum is the sum of a metric's samples in a /metrics answer.
func metricSum(text, name string) float64 {
	var sum float64
	for _, m := range regexp.MustCompile(`(?m)^`+name+`(?:\{[^}]*\})? (\S+)$`).FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
	}
	return sum
}

// A node stopped gracefully hands its leadership off before it goes: the
// bucket's new leader is elected at the next epoch while the old one is
// still in sync, the hand-off and the in-sync set's shrink (the stopped
// node taken out at once) are counted in the metrics, and /status.json
// shows the cluster: members, buckets, the under-replicated one.
func TestClusterGracefulStopHandsOff(t *testing.T) {
	c := newHTTPCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')")
	var b0 = c.bucket("n1")
	waitUntil(t, func() bool { b0 = c.bucket("n1"); return b0.Leader != "" && len(b0.ISR) == 3 })
	leader := c.nodes[b0.Leader]
	mustExec(t, client(t, leader.n.Addr()), "INSERT INTO t SELECT range, 'v' FROM range(100)")
	leader.stop()
	if err := <-leader.done; err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, b0.Leader)
	var other string
	for id := range c.nodes {
		other = id
	}
	after := c.bucket(other)
	// The hand-off is stored before the node stops; taking the stopped
	// node out of the in-sync set follows within a controller pass.
	waitUntil(t, func() bool { after = c.bucket(other); return len(after.ISR) == 2 })
	if after.Leader == b0.Leader || after.Leader == "" || after.Epoch != b0.Epoch+1 || slices.Contains(after.ISR, b0.Leader) {
		t.Fatalf("after %s stopped: %+v (was %+v): want another leader at the next epoch, %s out of the in-sync set", b0.Leader, after, b0, b0.Leader)
	}
	var handOffs, shrinks, under float64
	waitUntil(t, func() bool {
		handOffs, shrinks, under = 0, 0, 0
		for _, cn := range c.nodes {
			m := httpGet(t, "http://"+cn.n.HTTPAddr()+"/metrics")
			handOffs += metricSum(m, "lakestream_cluster_leader_handoffs_total")
			shrinks += metricSum(m, "lakestream_cluster_isr_shrinks_total")
			under = metricSum(m, "lakestream_cluster_under_replicated_buckets")
		}
		return handOffs >= 1 && shrinks >= 1 && under == 1
	})
	var st Status
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+c.nodes[after.Leader].n.HTTPAddr()+"/status.json")), &st); err != nil {
		t.Fatal(err)
	}
	cl := st.Cluster
	if cl == nil || cl.NodeID != after.Leader || len(cl.Members) != 3 || len(cl.Buckets) != 1 || cl.UnderReplicated != 1 ||
		cl.Buckets[0].Leader != after.Leader || cl.Buckets[0].LocalRole != "leader" || cl.Buckets[0].Table != "default.t" {
		t.Fatalf("status.json's cluster: %+v", cl)
	}
	for _, m := range cl.Members {
		if m.ID == b0.Leader && (m.State == "alive" || !m.Draining) {
			t.Errorf("the stopped node shows as %+v: want gone (left or dead), draining", m)
		}
	}
	for _, cn := range c.nodes {
		if got := queryInt64(t, client(t, cn.n.Addr()), "SELECT count(*) FROM t"); got != 100 {
			t.Errorf("%d rows, want 100", got)
		}
	}
}
