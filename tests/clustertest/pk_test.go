package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster"
)

// pkKeys are the keys call seq of the primary-key test's writer adds 1 to.
func pkKeys(seq int32) []int64 {
	s := int64(seq)
	return []int64{s % 50, (s + 17) % 50, (s + 31) % 50}
}

// A primary-key table (aggregation, n summed) on three node processes:
// an idempotent writer adds 1 to three keys per call, sending each call to
// the bucket's leader until it is acknowledged, while the leader is
// killed with SIGKILL and restarted, twice. Every node ends with each
// key's n equal to the number of acknowledged calls that touched it: no
// call lost, none applied twice (docs/cluster.md, "Primary-key tables").
func TestPKTableLeaderKills(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.createTable("kv", "CREATE TABLE kv (id BIGINT, n BIGINT, PRIMARY KEY (id)) WITH ('bucket.num' = '1', 'merge-engine' = 'aggregation', 'fields.n.agg' = 'sum')")
	ref := cluster.BucketRef{TableID: 1}
	h.waitFor("a leader of kv", func() bool { return h.bucket(ref).Leader != "" })
	want := map[int64]int64{}
	var seq int32
	retries := 0
	// call sends call seq until it is acknowledged.
	call := func() {
		vals := ""
		for i, k := range pkKeys(seq) {
			if i > 0 {
				vals += ", "
			}
			vals += fmt.Sprintf("(%d, 1)", k)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("call %d not acknowledged in 2 minutes", seq)
			}
			b := h.bucket(ref)
			p := h.nodes[b.Leader]
			if b.Leader == "" || p.cmd == nil {
				time.Sleep(5 * time.Millisecond) // no leader now: the controller elects one
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			ctx = metadata.AppendToOutgoingContext(ctx, "lakestream-writer-id", "5", "lakestream-writer-seq", strconv.Itoa(int(seq)))
			_, err := p.cl.ExecuteUpdate(ctx, "INSERT INTO kv VALUES "+vals)
			cancel()
			if err == nil {
				break
			}
			switch status.Code(err) {
			case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
				retries++
				time.Sleep(5 * time.Millisecond) // a failed node or a leader change: ask again
			default:
				t.Fatalf("call %d on %s: %v", seq, b.Leader, err)
			}
		}
		for _, k := range pkKeys(seq) {
			want[k]++
		}
		seq++
	}
	for round := range 2 {
		for range 15 {
			call()
		}
		leader := h.bucket(ref).Leader
		h.kill(leader)
		for range 15 {
			call() // on the new leader, once elected
		}
		h.start(leader)
		h.waitFor(fmt.Sprintf("round %d: %s back in sync", round, leader), func() bool {
			b := h.bucket(ref)
			return len(b.ISR) == len(b.Replicas)
		})
	}
	for range 10 {
		call()
	}
	var keys []int64
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, id := range h.order {
		cl := h.nodes[id].cl
		h.waitFor(id+" serves every acknowledged call once", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ids, err := queryInts(ctx, cl, "SELECT id * 1000000 + n FROM kv ORDER BY id")
			if err != nil {
				return false
			}
			if len(ids) != len(keys) {
				return false
			}
			for i, k := range keys {
				if ids[i] != k*1_000_000+want[k] {
					return false
				}
			}
			return true
		})
	}
	t.Logf("%d calls acknowledged, %d sends retried, 2 leader kills; every node holds each key's count exactly", seq, retries)
}
