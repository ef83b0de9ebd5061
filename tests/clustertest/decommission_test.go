package clustertest

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/node"
)

// TestDecommission decommissions the leader of a bucket with two replicas
// on a three-node cluster, with `lakestream cluster decommission`, while
// idempotent writers write to it: the command returns once the node holds
// no replica; by then the third node holds a replica in sync, the
// leadership moved, and every acknowledged row is on both replicas exactly
// once. `lakestream cluster status` lists the members and the bucket, and
// `lakestream cluster recommission` takes the mark off.
func TestDecommission(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.createTable("t", "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1', 'bucket.replicas' = '2')")
	ref := cluster.BucketRef{TableID: 1}
	before := h.waitInSync(ref)
	if len(before.Replicas) != 2 {
		t.Fatalf("placed on %v, want two replicas", before.Replicas)
	}
	gone := before.Leader
	var third string
	for _, id := range h.order {
		if !slices.Contains(before.Replicas, id) {
			third = id
		}
	}
	hist := newHistory()
	ctx, stopClients := context.WithCancel(context.Background())
	var clients sync.WaitGroup
	for w := int64(1); w <= 2; w++ {
		clients.Add(1)
		go func() { defer clients.Done(); h.writeLoop(ctx, &writer{id: w}, ref, hist) }()
	}
	defer func() { stopClients(); clients.Wait() }()
	h.waitFor("writes before the decommission", func() bool { return hist.ackCount() > 20 })

	out, err := exec.Command(h.bin, "cluster", "decommission", "--meta", h.meta, "--wait", "2m", gone).CombinedOutput()
	t.Logf("lakestream cluster decommission %s:\n%s", gone, out)
	if err != nil {
		t.Fatalf("decommission: %v", err)
	}
	after := h.bucket(ref)
	if slices.Contains(after.Replicas, gone) || !slices.Contains(after.Replicas, third) || after.Leader == gone || after.Leader == "" {
		t.Fatalf("after the decommission of %s: %+v", gone, after)
	}
	acked := hist.ackCount()
	h.waitFor("writes after the decommission", func() bool { return hist.ackCount() > acked+20 })

	// A new table is not placed on the decommissioned node.
	h.createTable("u", "CREATE TABLE u (id BIGINT) WITH ('bucket.num' = '4', 'bucket.replicas' = '2')")
	us, err := h.store.Buckets(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range us {
		if slices.Contains(b.Replicas, gone) {
			t.Errorf("a new table's bucket placed on the decommissioned %s: %+v", gone, b)
		}
	}

	statusCmd := exec.Command(h.bin, append([]string{"cluster", "status", "--addr", h.nodes[third].flight}, h.sec.cliArgs()...)...)
	statusCmd.Env = h.sec.cliEnv()
	status, err := statusCmd.CombinedOutput()
	t.Logf("lakestream cluster status:\n%s", status)
	if err != nil {
		t.Fatalf("cluster status: %v", err)
	}
	for _, want := range []string{"members (3)", "buckets (5; 0 under-replicated, 0 offline)", after.Leader} {
		if !strings.Contains(string(status), want) {
			t.Errorf("cluster status lacks %q", want)
		}
	}

	stopClients()
	clients.Wait()
	final := h.waitInSync(ref)
	for _, id := range final.Replicas {
		var rows []int64
		h.waitFor("the rows of "+id, func() bool {
			ids, err := queryInts(context.Background(), h.nodes[id].cl, "SELECT id FROM t")
			rows = ids
			return err == nil && len(ids) >= len(hist.acked)
		})
		have := map[int64]int{}
		for _, r := range rows {
			have[r]++
		}
		lost, dup := 0, 0
		for id := range hist.acked {
			if have[id] == 0 {
				lost++
			}
		}
		for _, n := range have {
			if n > 1 {
				dup++
			}
		}
		t.Logf("%s: %d rows; %d acknowledged calls, %d retried sends; lost %d, duplicated %d", id, len(rows), hist.acks, hist.retries, lost, dup)
		if lost+dup > 0 {
			t.Errorf("%s: lost %d acknowledged rows, %d stored twice", id, lost, dup)
		}
	}

	out, err = exec.Command(h.bin, "cluster", "recommission", "--meta", h.meta, gone).CombinedOutput()
	if err != nil {
		t.Fatalf("recommission: %v\n%s", err, out)
	}
	if _, err := h.store.Lease(context.Background(), node.DecommissionLease(gone)); !isNotFound(err) {
		t.Errorf("the decommission mark is still there after recommission: %v", err)
	}
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), meta.ErrNotFound.Error())
}
