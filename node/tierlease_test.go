package node

import (
	"context"
	"testing"

	"github.com/lakestream/lakestream/cluster/meta"
)

// The lake committer lease of a log table goes to a node in every
// bucket's in-sync set, or else to the eligible node in the most of them;
// a primary-key table's only to a node in every one, and a replica of
// each keeps it; a draining node neither takes nor keeps one.
func TestMayCommit(t *testing.T) {
	b := func(replicas, isr []string) meta.Bucket { return meta.Bucket{Replicas: replicas, ISR: isr} }
	all := []string{"n1", "n2", "n3"}
	n23 := []string{"n2", "n3"}
	n1 := []string{"n1"}
	n2 := []string{"n2"}
	live := func(string) bool { return true }
	dead := func(id string) bool { return id == "n1" }
	for _, tt := range []struct {
		name               string
		buckets            []meta.Bucket
		held, draining, pk bool
		eligible           func(string) bool
		want               bool
	}{
		{"every bucket in sync", []meta.Bucket{b(all, all), b(all, all)}, false, false, false, live, true},
		{"no buckets placed", nil, false, false, false, live, false},
		{"draining: not taken", []meta.Bucket{b(all, all)}, false, true, false, live, false},
		{"draining: given up", []meta.Bucket{b(all, all)}, true, true, false, live, false},
		// Log tables: the committer reads what it lacks from other nodes.
		{"another node in more in-sync sets", []meta.Bucket{b(all, all), b(n23, n23)}, false, false, false, live, false},
		{"the most in-sync sets", []meta.Bucket{b(n1, n1), b(n1, n1), b(n2, n2)}, false, false, false, live, true},
		{"as many as another, a smaller id", []meta.Bucket{b(n1, n1), b(n2, n2)}, false, false, false, live, true},
		{"the node in more is not eligible", []meta.Bucket{b(all, all), b(n23, n23)}, false, false, false, dead, true},
		{"held without a replica here", []meta.Bucket{b(n23, n23)}, true, false, false, live, true},
		{"no replica here, no other eligible", []meta.Bucket{b(n23, n23)}, false, false, false, dead, true},
		// Primary-key tables: every bucket here.
		{"pk: a bucket without a replica here", []meta.Bucket{b(all, all), b(n23, n23)}, false, false, true, dead, false},
		{"pk: held, a bucket without a replica here", []meta.Bucket{b(all, all), b(n23, n23)}, true, false, true, live, false},
		{"pk: out of a bucket's in-sync set: not taken", []meta.Bucket{b(all, all), b(all, n23)}, false, false, true, dead, false},
		{"pk: out of a bucket's in-sync set: kept", []meta.Bucket{b(all, all), b(all, n23)}, true, false, true, live, true},
		{"pk: draining: given up", []meta.Bucket{b(all, all)}, true, true, true, live, false},
	} {
		if got := mayCommit(tt.buckets, "n1", tt.held, tt.draining, tt.pk, tt.eligible); got != tt.want {
			t.Errorf("%s: mayCommit = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Two nodes' committer leases of a primary-key table over one metadata
// store (a log table's: TestCommitterLeasesLogTable): one holds the
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
		return committerLeases{r: &replication{self: id, store: store.Handle()}, primaryKey: func(context.Context, int64) bool { return true }}
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

// A log table's committer lease goes to the eligible node in the most
// in-sync sets, even with no replica of some buckets; another node takes
// it once that one is no longer eligible and has given it up.
func TestCommitterLeasesLogTable(t *testing.T) {
	ctx := context.Background()
	store := meta.NewMem(meta.Options{})
	// bucket.replicas = 1 on three nodes: n1 holds two buckets, n2 one.
	var bs []meta.Bucket
	for b, id := range []string{"n1", "n1", "n2"} {
		bs = append(bs, meta.Bucket{Key: meta.BucketKey{TableID: 7, Bucket: int32(b)}, Replicas: []string{id}, Leader: id, ISR: []string{id}})
	}
	if err := store.CreateBuckets(ctx, bs); err != nil {
		t.Fatal(err)
	}
	down := map[string]bool{}
	node := func(id string) committerLeases {
		return committerLeases{r: &replication{self: id, store: store.Handle()}, eligible: func(id string) bool { return !down[id] }}
	}
	n1, n2, n3 := node("n1"), node("n2"), node("n3")
	for _, n := range []committerLeases{n2, n3} {
		if _, ok, err := n.Acquire(ctx, 7); err != nil || ok {
			t.Fatalf("%s, in fewer in-sync sets than n1, takes the lease: %v, %v", n.r.self, ok, err)
		}
	}
	l1, ok, err := n1.Acquire(ctx, 7)
	if err != nil || !ok {
		t.Fatalf("n1 takes the free lease: %v, %v", ok, err)
	}
	// n1 goes down: its lease ends (released here), n2 takes it.
	down["n1"] = true
	if err := n1.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := n3.Acquire(ctx, 7); err != nil || ok {
		t.Fatalf("n3 takes the lease before n2: %v, %v", ok, err)
	}
	l2, ok, err := n2.Acquire(ctx, 7)
	if err != nil || !ok || l2.Token <= l1.Token {
		t.Fatalf("n2 takes the lease: %+v, %v, %v; want a token above %d", l2, ok, err, l1.Token)
	}
}
