package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/membership"
)

// realNode is a node of the real-log test: a replicated TableLog of two
// buckets in its own directory, its replicas served over gRPC, its
// controller and watcher on the shared store.
type realNode struct {
	id   string
	dir  string
	tl   *columnarlog.TableLog
	r    *Replicas
	srv  *grpc.Server
	addr string
	stop func()
}

// Three nodes replicate a two-bucket table's real logs over gRPC while
// writers append to each bucket's leader; each bucket's leader is killed
// in turn and restarted from its directory. Every acknowledged batch is in
// the final log exactly once, and all replicas hold the same bytes up to
// the high watermark.
func TestRealLogsReplicateThroughFailovers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := meta.NewMem(meta.Options{})
	live := &liveSet{dead: map[string]bool{}}
	tr := NewGRPCTransport()
	defer tr.Close()
	var addrs sync.Map
	refs := []BucketRef{{TableID: 1, Bucket: 0}, {TableID: 1, Bucket: 1}}
	var placed []meta.Bucket
	for _, ref := range refs {
		placed = append(placed, Place(ref, 3, []membership.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}))
	}
	if err := store.CreateBuckets(ctx, placed); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	start := func(id string) *realNode {
		n := &realNode{id: id, dir: filepath.Join(root, id)}
		var err error
		if n.tl, err = columnarlog.OpenTable(n.dir, 2, columnarlog.Options{Replicated: true}); err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
		h := store.Handle()
		if n.r, err = NewReplicas(Config{NodeID: id, ReplicaLagMax: time.Second, FetchMaxWait: 50 * time.Millisecond,
			RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 50 * time.Millisecond, Logger: testLogger}, tr, StoreISRChange(h, id)); err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
			n.r.Add(ref, BucketLog(n.tl, int(ref.Bucket)))
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n.addr = l.Addr().String()
		addrs.Store(id, n.addr)
		n.srv = grpc.NewServer()
		Register(n.srv, n.r)
		go n.srv.Serve(l)
		nctx, stop := context.WithCancel(ctx)
		ctl := &Controller{Self: id, Store: h, Alive: live.alive, LeaseTTL: time.Second, Every: 50 * time.Millisecond, Logger: testLogger}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); ctl.Run(nctx) }()
		go func() {
			defer wg.Done()
			Watch(nctx, h, n.r, func(BucketRef) int { return 2 }, func(id string) string {
				a, _ := addrs.Load(id)
				s, _ := a.(string)
				return s
			}, 20*time.Millisecond)
		}()
		n.stop = func() {
			stop()
			wg.Wait()
			n.srv.Stop()
			n.r.Close()
			n.tl.Close()
		}
		return n
	}
	var mu sync.Mutex
	nodes := map[string]*realNode{}
	for _, id := range []string{"a", "b", "c"} {
		nodes[id] = start(id)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range nodes {
			n.stop()
		}
	}()
	current := func(ref BucketRef) (meta.Bucket, *realNode) {
		b, err := store.Bucket(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return b, nodes[b.Leader]
	}
	// write appends batch id to the bucket's current leader and waits for
	// its acknowledgement.
	write := func(ref BucketRef, id int64) error {
		b, n := current(ref)
		if n == nil {
			return ErrNotLeader
		}
		if err := n.r.BeforeWrite(ref); err != nil {
			return err
		}
		msg := make([]byte, 64)
		binary.LittleEndian.PutUint64(msg, uint64(id))
		batch, err := columnarlog.NewBatch(columnarlog.Header{SchemaID: 1, RecordCount: 4}, nil, nil, msg)
		if err != nil {
			return err
		}
		parts := make([][]columnarlog.Batch, 2)
		parts[ref.Bucket] = []columnarlog.Batch{batch}
		res, err := n.tl.Append(parts)
		if err != nil {
			return fmt.Errorf("append on %s (epoch %d): %w", b.Leader, b.Epoch, err)
		}
		end := res[ref.Bucket][0].BaseOffset + 4
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return n.r.WaitAcked(wctx, ref, end)
	}
	acked := map[BucketRef][]int64{}
	var ackMu sync.Mutex
	var wg sync.WaitGroup
	writers, done := context.WithCancel(ctx)
	for _, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := int64(ref.Bucket) << 32; writers.Err() == nil; id++ {
				if err := write(ref, id); err == nil {
					ackMu.Lock()
					acked[ref] = append(acked[ref], id)
					ackMu.Unlock()
				} else {
					testLogger.Info("write", "ref", ref.String(), "err", err)
					time.Sleep(10 * time.Millisecond) // an election is under way: no event to wait on
				}
			}
		}()
	}
	countAcked := func() int {
		ackMu.Lock()
		defer ackMu.Unlock()
		return len(acked[refs[0]]) + len(acked[refs[1]])
	}
	waitCond(t, "writes acknowledged", func() bool { return countAcked() > 20 })
	for round, ref := range []BucketRef{refs[0], refs[1], refs[0]} {
		b, n := current(ref)
		if n == nil {
			t.Fatalf("round %d: %s has no leader", round, ref)
		}
		// kill the leader: gone from gossip, unreachable, stopped.
		live.set(b.Leader, false)
		n.stop()
		mu.Lock()
		delete(nodes, b.Leader)
		mu.Unlock()
		before := countAcked()
		waitCond(t, "writes go on after the leader died", func() bool { return countAcked() > before+20 })
		// it comes back from its directory.
		live.set(b.Leader, true)
		back := start(b.Leader)
		mu.Lock()
		nodes[b.Leader] = back
		mu.Unlock()
		waitCond(t, "the old leader rejoins every in-sync set", func() bool {
			for _, ref := range refs {
				if st, _ := current(ref); !slices.Contains(st.ISR, b.Leader) {
					return false
				}
			}
			return true
		})
	}
	done()
	wg.Wait()
	for _, ref := range refs {
		st, leader := current(ref)
		hw := leader.tl.HighWatermark(int(ref.Bucket))
		want := readIDs(t, leader.tl, int(ref.Bucket), hw)
		ackMu.Lock()
		for _, id := range acked[ref] {
			if n := count(want, id); n != 1 {
				t.Errorf("%s: acknowledged batch %d is in the log %d times", ref, id, n)
			}
		}
		ackMu.Unlock()
		lb := replicaBytes(t, leader.tl, int(ref.Bucket), hw)
		mu.Lock()
		for id, n := range nodes {
			waitCond(t, id+" reaches the high watermark", func() bool { return n.tl.Bucket(int(ref.Bucket)).Durable() >= hw })
			if got := replicaBytes(t, n.tl, int(ref.Bucket), hw); !bytes.Equal(got, lb) {
				t.Errorf("%s: %s's bytes up to %d differ from the leader %s's", ref, id, hw, st.Leader)
			}
		}
		mu.Unlock()
	}
}

func count(ids []int64, id int64) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// replicaBytes is bucket b's stored bytes below offset to.
func replicaBytes(t *testing.T, tl *columnarlog.TableLog, b int, to int64) []byte {
	t.Helper()
	var out []byte
	for _, bt := range readBatches(t, tl, b, to) {
		out = append(out, bt...)
	}
	return out
}

func readBatches(t *testing.T, tl *columnarlog.TableLog, b int, to int64) []columnarlog.Batch {
	t.Helper()
	r, err := tl.Bucket(b).NewReplicaReader(tl.Bucket(b).Start())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []columnarlog.Batch
	for {
		bs, _, err := r.Next(nil, 1<<20)
		if err != nil && !errors.Is(err, columnarlog.ErrTruncated) {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			return out
		}
		for _, bt := range bs {
			if bt.NextOffset() > to {
				return out
			}
			out = append(out, slices.Clone(bt))
		}
	}
}

// readIDs is the batch ids (the first 8 bytes of each message) below to.
func readIDs(t *testing.T, tl *columnarlog.TableLog, b int, to int64) []int64 {
	var ids []int64
	for _, bt := range readBatches(t, tl, b, to) {
		msg, err := bt.ArrowMessage()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, int64(binary.LittleEndian.Uint64(msg)))
	}
	return ids
}

// testLogger is quiet; LAKESTREAM_TEST_LOG=1 shows the replicas' and
// writers' logs when a failure needs them.
var testLogger = func() *slog.Logger {
	if os.Getenv("LAKESTREAM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}()
