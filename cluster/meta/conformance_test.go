package meta

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

func bucket(table int64, part string, n int32, leader string, epoch int32) Bucket {
	return Bucket{
		Key:      BucketKey{TableID: table, Partition: part, Bucket: n},
		Replicas: []string{"n1", "n2", "n3"},
		Leader:   leader,
		Epoch:    epoch,
		ISR:      []string{"n1", "n2", "n3"},
	}
}

func mustCreate(t *testing.T, s Store, bs ...Bucket) {
	t.Helper()
	if err := s.CreateBuckets(context.Background(), bs); err != nil {
		t.Fatalf("create: %v", err)
	}
}

func mustBucket(t *testing.T, s Store, k BucketKey) Bucket {
	t.Helper()
	b, err := s.Bucket(context.Background(), k)
	if err != nil {
		t.Fatalf("read %s: %v", k, err)
	}
	return b
}

func keys(bs []Bucket) []BucketKey {
	ks := make([]BucketKey, len(bs))
	for i, b := range bs {
		ks[i] = b.Key
	}
	return ks
}

func testCreateAndRead(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	in := []Bucket{
		bucket(2, "", 1, "n1", 0),
		bucket(1, "dt=2026-01-02", 0, "n2", 3),
		bucket(1, "dt=2026-01-01", 1, "", 0),
		bucket(1, "dt=2026-01-01", 0, "n1", 7),
		bucket(1, "Zeta", 0, "n3", 0), // bytewise: upper case sorts first
	}
	in[0].Version = 42 // ignored: the store sets 1
	mustCreate(t, s, in...)

	got := mustBucket(t, s, in[1].Key)
	want := in[1]
	want.Version = 1
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Bucket = %+v, want %+v", got, want)
	}
	if _, err := s.Bucket(ctx, BucketKey{TableID: 9}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Bucket of a missing key: %v, want ErrNotFound", err)
	}

	t1, err := s.Buckets(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []BucketKey{in[4].Key, in[3].Key, in[2].Key, in[1].Key}
	if !reflect.DeepEqual(keys(t1), wantKeys) {
		t.Errorf("Buckets(1) keys = %v, want %v", keys(t1), wantKeys)
	}
	all, err := s.AllBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(wantKeys, in[0].Key); !reflect.DeepEqual(keys(all), want) {
		t.Errorf("AllBuckets keys = %v, want %v", keys(all), want)
	}
	for _, b := range all {
		if b.Version != 1 {
			t.Errorf("%s: version %d after create, want 1", b.Key, b.Version)
		}
	}
	if none, err := s.Buckets(ctx, 77); err != nil || len(none) != 0 {
		t.Errorf("Buckets of an unknown table = %v, %v; want none", none, err)
	}
	// An offline bucket keeps its empty leader and ISR.
	off := bucket(3, "", 0, "", 2)
	off.ISR = nil
	mustCreate(t, s, off)
	if got := mustBucket(t, s, off.Key); got.Leader != "" || len(got.ISR) != 0 || got.Epoch != 2 {
		t.Errorf("offline bucket read back as %+v", got)
	}
}

func testCreateAllOrNone(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	mustCreate(t, s, bucket(1, "", 1, "n1", 0))
	err := s.CreateBuckets(ctx, []Bucket{bucket(1, "", 0, "n1", 0), bucket(1, "", 1, "n2", 0), bucket(1, "", 2, "n1", 0)})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("create over an existing bucket: %v, want ErrExists", err)
	}
	bs, err := s.Buckets(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Leader != "n1" {
		t.Errorf("after a refused create the table holds %+v, want only the first bucket", bs)
	}
	// A key twice in one call is the caller's mistake, not an existing row.
	if err := s.CreateBuckets(ctx, []Bucket{bucket(5, "", 0, "n1", 0), bucket(5, "", 0, "n1", 0)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a key twice: %v, want ErrInvalid", err)
	}
	if err := s.CreateBuckets(ctx, nil); err != nil {
		t.Errorf("create nothing: %v", err)
	}
}

func testInvalid(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	good := bucket(1, "", 0, "n1", 0)
	mustCreate(t, s, good)
	good.Version = 1
	for name, mutate := range map[string]func(b *Bucket){
		"leader not a replica": func(b *Bucket) { b.Leader = "n9"; b.ISR = append(b.ISR, "n9") },
		"leader not in isr":    func(b *Bucket) { b.ISR = []string{"n2"} },
		"isr not replicas":     func(b *Bucket) { b.ISR = []string{"n1", "n4"} },
		"duplicate replica":    func(b *Bucket) { b.Replicas = []string{"n1", "n2", "n1"} },
		"duplicate isr":        func(b *Bucket) { b.ISR = []string{"n1", "n1"} },
		"empty replica id":     func(b *Bucket) { b.Replicas = []string{"n1", ""} },
		"no replicas":          func(b *Bucket) { b.Replicas, b.ISR, b.Leader = nil, nil, "" },
		"negative epoch":       func(b *Bucket) { b.Epoch = -1 },
		"negative bucket":      func(b *Bucket) { b.Key.Bucket = -1 },
	} {
		b := good
		b.Replicas, b.ISR = append([]string(nil), good.Replicas...), append([]string(nil), good.ISR...)
		mutate(&b)
		if err := s.CreateBuckets(ctx, []Bucket{b}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: create: %v, want ErrInvalid", name, err)
		}
		if _, err := s.UpdateBucket(ctx, b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: update: %v, want ErrInvalid", name, err)
		}
	}
	if got := mustBucket(t, s, good.Key); !reflect.DeepEqual(got, good) {
		t.Errorf("invalid writes changed the bucket: %+v", got)
	}
}

func testUpdateCAS(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	mustCreate(t, s, bucket(1, "p", 0, "n1", 0))
	b := mustBucket(t, s, BucketKey{1, "p", 0})

	shrink := b
	shrink.ISR = []string{"n1", "n2"}
	got, err := s.UpdateBucket(ctx, shrink)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || !reflect.DeepEqual(got.ISR, shrink.ISR) {
		t.Errorf("update returned %+v, want version 2 with the new isr", got)
	}
	if again := mustBucket(t, s, b.Key); !reflect.DeepEqual(again, got) {
		t.Errorf("read after update = %+v, want %+v", again, got)
	}

	// The same version again: the write of someone who read before ours.
	stale := b
	stale.ISR = []string{"n1"}
	_, err = s.UpdateBucket(ctx, stale)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v, want *ConflictError", err)
	}
	if !reflect.DeepEqual(ce.Current, got) {
		t.Errorf("conflict carries %+v, want the stored %+v", ce.Current, got)
	}
	future := got
	future.Version = 9
	if _, err := s.UpdateBucket(ctx, future); !errors.Is(err, ErrConflict) {
		t.Errorf("update from a version not yet reached: %v, want ErrConflict", err)
	}
	missing := got
	missing.Key.Bucket = 5
	if _, err := s.UpdateBucket(ctx, missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing bucket: %v, want ErrNotFound", err)
	}
}

func testEpochRule(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	mustCreate(t, s, bucket(1, "", 0, "n1", 5))
	cur := mustBucket(t, s, BucketKey{1, "", 0})
	try := func(leader string, epoch int32, isr ...string) (Bucket, error) {
		b := cur
		b.Leader, b.Epoch = leader, epoch
		if isr != nil {
			b.ISR = isr
		}
		return s.UpdateBucket(ctx, b)
	}
	for _, bad := range []struct {
		leader string
		epoch  int32
	}{{"n2", 5}, {"n2", 4}, {"n1", 4}, {"", 5}} {
		if _, err := try(bad.leader, bad.epoch); !errors.Is(err, ErrConflict) {
			t.Errorf("leader %q epoch %d over leader n1 epoch 5: %v, want ErrConflict", bad.leader, bad.epoch, err)
		}
	}
	var err error
	if cur, err = try("n1", 5, "n1"); err != nil { // same leader, same epoch: an ISR change
		t.Fatalf("isr change at the same epoch: %v", err)
	}
	if cur, err = try("n1", 6); err != nil { // same leader, a new epoch: allowed
		t.Fatalf("same leader, higher epoch: %v", err)
	}
	if cur, err = try("", 7, "n2"); err != nil { // offline
		t.Fatalf("leader to none: %v", err)
	}
	if cur, err = try("n2", 9, "n2"); err != nil { // back, skipping an epoch
		t.Fatalf("leader n2 at epoch 9: %v", err)
	}
	if cur.Version != 5 || cur.Epoch != 9 || cur.Leader != "n2" {
		t.Errorf("final bucket %+v, want version 5 leader n2 epoch 9", cur)
	}
}

func testDeleteTable(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	mustCreate(t, s, bucket(1, "", 0, "n1", 0), bucket(1, "", 1, "n1", 0), bucket(2, "", 0, "n1", 0))
	before, _ := s.Changes(ctx)
	if err := s.DeleteTable(ctx, 1); err != nil {
		t.Fatal(err)
	}
	all, err := s.AllBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Key.TableID != 2 {
		t.Errorf("after deleting table 1: %+v", all)
	}
	after, _ := s.Changes(ctx)
	if err := s.DeleteTable(ctx, 1); err != nil {
		t.Errorf("deleting a deleted table: %v", err)
	}
	again, _ := s.Changes(ctx)
	if after <= before || again != after {
		t.Errorf("changes %d → %d → %d: want a rise on the delete and none on the empty one", before, after, again)
	}
	// The keys are free again, from version 1.
	mustCreate(t, s, bucket(1, "", 0, "n2", 0))
	if b := mustBucket(t, s, BucketKey{1, "", 0}); b.Version != 1 {
		t.Errorf("recreated bucket at version %d", b.Version)
	}
}

func testChanges(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	other := e.store(t) // another node polls
	last, err := other.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rises := func(what string, want bool) {
		t.Helper()
		n, err := other.Changes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if (n > last) != want || n < last {
			t.Errorf("%s: changes %d → %d, want a rise: %v", what, last, n, want)
		}
		last = n
	}
	mustCreate(t, s, bucket(1, "", 0, "n1", 0))
	rises("create", true)
	b := mustBucket(t, s, BucketKey{1, "", 0})
	b.ISR = []string{"n1"}
	if _, err := s.UpdateBucket(ctx, b); err != nil {
		t.Fatal(err)
	}
	rises("update", true)
	if _, err := s.UpdateBucket(ctx, b); !errors.Is(err, ErrConflict) {
		t.Fatal(err)
	}
	rises("refused update", false)
	l, err := s.AcquireLease(ctx, "controller", "n1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rises("new lease holder", true)
	if _, err := s.AcquireLease(ctx, "controller", "n1", time.Minute); err != nil {
		t.Fatal(err)
	}
	rises("renewal", false)
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	rises("release", true)
}

func testReopen(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store(t)
	mustCreate(t, s, bucket(1, "", 0, "n1", 0))
	if _, err := s.AcquireLease(ctx, "controller", "n1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Opening again finds the schema in place and changes nothing.
	s2 := e.store(t)
	if b := mustBucket(t, s2, BucketKey{1, "", 0}); b.Version != 1 || b.Leader != "n1" {
		t.Errorf("after reopen: %+v", b)
	}
	if l, err := s2.Lease(ctx, "controller"); err != nil || l.Holder != "n1" || l.Token != 1 {
		t.Errorf("lease after reopen: %+v, %v", l, err)
	}
}

// testConcurrentOpen opens a fresh store from several nodes at once: the
// schema is created once, and every node can write.
func testConcurrentOpen(t *testing.T, e *env) {
	const n = 4
	stores, errs := make([]Store, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = e.openStore(Options{}) })
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		t.Cleanup(func() { closeStore(t, s) })
	}
	for i, s := range stores {
		mustCreate(t, s, bucket(1, "", int32(i), "n1", 0))
	}
	all, err := stores[0].AllBuckets(context.Background())
	if err != nil || len(all) != n {
		t.Errorf("after %d creates: %d buckets, %v", n, len(all), err)
	}
}

func testClosed(t *testing.T, e *env) {
	ctx, s := context.Background(), e.store(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second close: %v", err)
	}
	if _, err := s.Bucket(ctx, BucketKey{}); !errors.Is(err, ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
	if err := s.CreateBuckets(ctx, []Bucket{bucket(1, "", 0, "n1", 0)}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
}

// testSecret: the first value stored under a name is the one every
// handle gets, concurrent first calls included, and it outlives a reopen.
func testSecret(t *testing.T, e *env) {
	ctx := context.Background()
	const n = 4
	stores := make([]Store, n)
	for i := range stores {
		stores[i] = e.store(t)
	}
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = s.Secret(ctx, "ticket-key", []byte{byte(i + 1), 0xaa})
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("store %d: %v", i, errs[i])
		}
		if !bytes.Equal(got[i], got[0]) || len(got[i]) != 2 {
			t.Fatalf("store %d got %x, store 0 %x: want one value", i, got[i], got[0])
		}
	}
	if other, err := stores[0].Secret(ctx, "other", []byte{7}); err != nil || !bytes.Equal(other, []byte{7}) {
		t.Errorf("another name: %x, %v", other, err)
	}
	if _, err := stores[0].Secret(ctx, "empty", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty value: %v, want ErrInvalid", err)
	}
	for _, s := range stores {
		closeStore(t, s)
	}
	if again, err := e.store(t).Secret(ctx, "ticket-key", []byte{9}); err != nil || !bytes.Equal(again, got[0]) {
		t.Errorf("after reopen: %x, %v, want %x", again, err, got[0])
	}
}
