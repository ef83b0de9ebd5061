package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster/meta"
)

// tableBuckets is the stored state of every bucket of table id.
func (c *testCluster) tableBuckets(on string, id int64) []meta.Bucket {
	c.t.Helper()
	bs, err := c.nodes[on].n.repl.store.Buckets(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return bs
}

// waitLeaders waits until every bucket of table id has a leader, and
// returns the buckets each node leads.
func (c *testCluster) waitLeaders(id int64) map[string]int {
	var led map[string]int
	waitUntil(c.t, func() bool {
		led = map[string]int{}
		for _, b := range c.tableBuckets("n1", id) {
			if b.Leader == "" {
				return false
			}
			if _, a := c.nodes[b.Leader].n.repl.reps.Role(b.Key); !a {
				return false
			}
			led[b.Leader]++
		}
		return len(led) > 0
	})
	return led
}

// A table whose buckets each live on one node (bucket.replicas 1) reads
// whole from every node: each node reads the buckets it does not hold
// from the nodes that do, with the query's projection and filters, for a
// log table, its changelog and a primary-key table; a node that is down
// makes the read fail Unavailable, naming it (docs/cluster.md,
// "Distributed queries").
func TestClusterQueryReadsRemoteBuckets(t *testing.T) {
	c := newTestCluster(t, "n1", "n2", "n3")
	c.exec("CREATE TABLE t (k BIGINT, v VARCHAR) WITH ('bucket.num' = '6', 'bucket.replicas' = '1')",
		"CREATE TABLE kv (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num' = '1', 'bucket.replicas' = '1')")
	led := c.waitLeaders(1)
	var total, hits int64
	for id := range led {
		cl := client(t, c.nodes[id].n.Addr())
		for i := range 3 {
			lo := total
			mustExec(t, cl, fmt.Sprintf("INSERT INTO t SELECT range, 'x' || (range %% 10) FROM range(%d, %d)", lo, lo+1000+int64(i)))
			total += 1000 + int64(i)
		}
	}
	for k := range total {
		if k%10 == 3 {
			hits++
		}
	}
	kvLeader := c.tableBuckets("n1", 2)[0]
	c.waitLeaders(2)
	mustExec(t, client(t, c.nodes[kvLeader.Leader].n.Addr()),
		"INSERT INTO kv SELECT range, 'a' FROM range(0, 50)", "UPDATE kv SET v = 'b' WHERE id < 10", "DELETE FROM kv WHERE id >= 40")
	for _, id := range []string{"n1", "n2", "n3"} {
		cl := client(t, c.nodes[id].n.Addr())
		want := []string{fmt.Sprintf("%d|%d|%d", total, total*(total-1)/2, hits)}
		if got := queryRows(t, cl, "SELECT count(*), sum(k), count(*) FILTER (WHERE v = 'x3') FROM t"); strings.Join(got, ",") != want[0] {
			t.Errorf("on %s: %v, want %v", id, got, want)
		}
		if got := queryRows(t, cl, "SELECT count(*) FROM t WHERE v = 'x3' AND k >= 0"); got[0] != fmt.Sprint(hits) {
			t.Errorf("on %s, with pushed filters: %v, want %d", id, got, hits)
		}
		if got := queryRows(t, cl, `SELECT count(*) FROM "t$changelog"`); got[0] != fmt.Sprint(total) {
			t.Errorf("on %s, the changelog: %v, want %d", id, got, total)
		}
		if got := queryRows(t, cl, "SELECT count(*), count(*) FILTER (WHERE v = 'b') FROM kv"); got[0] != "40|10" {
			t.Errorf("on %s, the primary-key table: %v, want 40|10", id, got)
		}
	}
	// A node that holds a bucket stops: the others' reads of the table
	// fail Unavailable, naming it.
	var gone string
	for _, b := range c.tableBuckets("n1", 1) {
		if b.Leader != "n1" {
			gone = b.Leader
			break
		}
	}
	if gone == "" {
		t.Fatal("n1 leads every bucket: no remote bucket to lose")
	}
	c.nodes[gone].stop()
	if err := <-c.nodes[gone].done; err != nil {
		t.Fatal(err)
	}
	err := queryErr(context.Background(), client(t, c.nodes["n1"].n.Addr()), "SELECT count(*) FROM t")
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "node "+gone) {
		t.Fatalf("a read of a bucket on a stopped node: %v, want Unavailable naming node %s", err, gone)
	}
}

// queryErr runs a query to its end and returns its error.
func queryErr(ctx context.Context, cl *flightsql.Client, sql string) error {
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return err
	}
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return err
		}
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
