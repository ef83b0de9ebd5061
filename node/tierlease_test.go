package node

import (
	"context"
	"testing"

	"github.com/lakestream/lakestream/cluster/meta"
)

// The lake committer lease goes only to a node holding a replica of
// every bucket, in sync and not draining; once held, a replica of each
// keeps it while the node does not drain.
func TestMayCommit(t *testing.T) {
	b := func(replicas, isr []string) meta.Bucket { return meta.Bucket{Replicas: replicas, ISR: isr} }
	all := []string{"n1", "n2", "n3"}
	for _, tt := range []struct {
		name           string
		buckets        []meta.Bucket
		held, draining bool
		want           bool
	}{
		{"every bucket in sync", []meta.Bucket{b(all, all), b(all, all)}, false, false, true},
		{"no buckets placed", nil, false, false, false},
		{"a bucket without a replica here", []meta.Bucket{b(all, all), b([]string{"n2", "n3"}, []string{"n2", "n3"})}, false, false, false},
		{"held, a bucket without a replica here", []meta.Bucket{b(all, all), b([]string{"n2", "n3"}, []string{"n2", "n3"})}, true, false, false},
		{"out of a bucket's in-sync set: not taken", []meta.Bucket{b(all, all), b(all, []string{"n2", "n3"})}, false, false, false},
		{"out of a bucket's in-sync set: kept", []meta.Bucket{b(all, all), b(all, []string{"n2", "n3"})}, true, false, true},
		{"draining: not taken", []meta.Bucket{b(all, all)}, false, true, false},
		{"draining: given up", []meta.Bucket{b(all, all)}, true, true, false},
	} {
		if got := mayCommit(tt.buckets, "n1", tt.held, tt.draining); got != tt.want {
			t.Errorf("%s: mayCommit = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Two nodes' committer leases over one metadata store: one holds the
// table's lease and renews it under its token; the other cannot take it;
// the holder gives it up once it loses a bucket's replica, and the other
// takes it under a higher token; a node out of a bucket's in-sync set
// cannot.
func TestCommitterLeases(t *testing.T) {
	ctx := context.Background()
	store := meta.NewMem(meta.Options{})
	all := []string{"n1", "n2", "n3"}
	var bs []meta.Bucket
	for b := range 2 {
		bs = append(bs, meta.Bucket{Key: meta.BucketKey{TableID: 7, Bucket: int32(b)}, Replicas: all, Leader: "n1", ISR: []string{"n1", "n2"}})
	}
	if err := store.CreateBuckets(ctx, bs); err != nil {
		t.Fatal(err)
	}
	node := func(id string) committerLeases {
		return committerLeases{&replication{self: id, store: store.Handle()}}
	}
	n1, n2, n3 := node("n1"), node("n2"), node("n3")
	l1, ok, err := n1.Acquire(ctx, 7)
	if err != nil || !ok {
		t.Fatalf("n1 takes the free lease: %v, %v", ok, err)
	}
	if _, ok, err := n2.Acquire(ctx, 7); err != nil || ok {
		t.Fatalf("n2 takes n1's lease: %v, %v", ok, err)
	}
	if again, ok, err := n1.Acquire(ctx, 7); err != nil || !ok || again.Token != l1.Token {
		t.Fatalf("n1's renewal: %+v, %v, %v; want token %d", again, ok, err, l1.Token)
	}
	// n1 loses its replica of bucket 1: it gives the lease up.
	b, err := store.Bucket(ctx, meta.BucketKey{TableID: 7, Bucket: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.Replicas, b.ISR, b.Leader, b.Epoch = []string{"n2", "n3"}, []string{"n2"}, "n2", b.Epoch+1
	if _, err := store.UpdateBucket(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := n1.Acquire(ctx, 7); err != nil || ok {
		t.Fatalf("n1 without a replica of bucket 1 keeps the lease: %v, %v", ok, err)
	}
	if _, ok, err := n3.Acquire(ctx, 7); err != nil || ok {
		t.Fatalf("n3, out of the in-sync sets, takes the lease: %v, %v", ok, err)
	}
	l2, ok, err := n2.Acquire(ctx, 7)
	if err != nil || !ok || l2.Token <= l1.Token {
		t.Fatalf("n2 takes the lease n1 gave up: %+v, %v, %v; want a token above %d", l2, ok, err, l1.Token)
	}
	if err := n2.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if err := n2.Release(ctx, l2); err != nil {
		t.Fatalf("a second release: %v", err)
	}
}
