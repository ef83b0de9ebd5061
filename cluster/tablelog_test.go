package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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

// realNode is a node of the real-log tests: a replicated TableLog of two
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

// realCluster is three nodes over real logs, gRPC, a shared metadata store
// in memory, a membership the test sets, and a network that can cut the
// replication links between two nodes, one way.
type realCluster struct {
	t     *testing.T
	ctx   context.Context
	store *meta.Mem
	live  *liveSet
	net   *faultNet
	refs  []BucketRef
	root  string
	addrs sync.Map
	// segmentBytes, when set, rolls the nodes' segments that small.
	segmentBytes int64

	mu    sync.Mutex
	nodes map[string]*realNode
}

func newRealCluster(t *testing.T, ctx context.Context) *realCluster {
	return newRealClusterWith(t, ctx, 0)
}

// newRealClusterWith starts the cluster with segments rolled at
// segmentBytes (0: the default).
func newRealClusterWith(t *testing.T, ctx context.Context, segmentBytes int64) *realCluster {
	c := &realCluster{t: t, ctx: ctx, store: meta.NewMem(meta.Options{}), live: &liveSet{dead: map[string]bool{}},
		net: &faultNet{cut: map[[2]string]bool{}}, refs: []BucketRef{{TableID: 1, Bucket: 0}, {TableID: 1, Bucket: 1}},
		root: t.TempDir(), nodes: map[string]*realNode{}, segmentBytes: segmentBytes}
	var placed []meta.Bucket
	for _, ref := range c.refs {
		placed = append(placed, Place(ref, 3, []membership.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}))
	}
	if err := c.store.CreateBuckets(ctx, placed); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		c.start(id)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.nodes {
			n.stop()
		}
	})
	return c
}

// start starts node id from its directory (anew or after a kill).
func (c *realCluster) start(id string) {
	t := c.t
	n := &realNode{id: id, dir: filepath.Join(c.root, id)}
	var err error
	if n.tl, err = columnarlog.OpenTable(n.dir, len(c.refs), columnarlog.Options{Replicated: true, SegmentBytes: c.segmentBytes}); err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	h := c.store.Handle()
	tr := &faultTransport{self: id, inner: NewGRPCTransport(), net: c.net, addrs: &c.addrs}
	if n.r, err = NewReplicas(Config{NodeID: id, ReplicaLagMax: time.Second, FetchMaxWait: 50 * time.Millisecond,
		RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 50 * time.Millisecond, Logger: testLogger}, tr, StoreISRChange(h, id)); err != nil {
		t.Fatal(err)
	}
	for _, ref := range c.refs {
		n.r.Add(ref, BucketLog(n.tl, int(ref.Bucket)))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = l.Addr().String()
	c.addrs.Store(id, n.addr)
	n.srv = grpc.NewServer()
	Register(n.srv, n.r, nil)
	go n.srv.Serve(l)
	nctx, stop := context.WithCancel(c.ctx)
	ctl := &Controller{Self: id, Store: h, Alive: c.live.alive, LeaseTTL: time.Second, Every: 50 * time.Millisecond, Logger: testLogger}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ctl.Run(nctx) }()
	go func() {
		defer wg.Done()
		Watch(nctx, h, n.r, func(meta.Bucket) int { return 2 }, func(id string) string { return id }, 20*time.Millisecond, nil)
	}()
	n.stop = func() {
		stop()
		wg.Wait()
		n.srv.Stop()
		n.r.Close()
		tr.inner.Close()
		n.tl.Close()
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
}

// kill stops node id as a crash does, as far as the others can tell: gone
// from gossip, unreachable, its replicas stopped.
func (c *realCluster) kill(id string) {
	c.live.set(id, false)
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n != nil {
		n.stop()
	}
}

// revive starts a killed node again.
func (c *realCluster) revive(id string) {
	c.live.set(id, true)
	c.start(id)
}

func (c *realCluster) node(id string) *realNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

func (c *realCluster) bucket(ref BucketRef) meta.Bucket {
	b, err := c.store.Bucket(c.ctx, ref)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// write appends batch id to the bucket's current leader and waits for its
// acknowledgement.
func (c *realCluster) write(ref BucketRef, id int64) error {
	b := c.bucket(ref)
	n := c.node(b.Leader)
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
	parts := make([][]columnarlog.Batch, len(c.refs))
	parts[ref.Bucket] = []columnarlog.Batch{batch}
	res, err := n.tl.Append(parts)
	if err != nil {
		return fmt.Errorf("append on %s (epoch %d): %w", b.Leader, b.Epoch, err)
	}
	wctx, cancel := context.WithTimeout(c.ctx, 3*time.Second)
	defer cancel()
	return n.r.WaitAcked(wctx, ref, res[ref.Bucket][0].BaseOffset+4)
}

// writers append to every bucket until stop, one writer per bucket, and
// record what was acknowledged.
type writers struct {
	mu    sync.Mutex
	acked map[BucketRef][]int64
	fails int
	wg    sync.WaitGroup
	stop  context.CancelFunc
}

func (c *realCluster) startWriters() *writers {
	w := &writers{acked: map[BucketRef][]int64{}}
	ctx, stop := context.WithCancel(c.ctx)
	w.stop = stop
	for _, ref := range c.refs {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for id := int64(ref.Bucket) << 32; ctx.Err() == nil; id++ {
				err := c.write(ref, id)
				w.mu.Lock()
				if err == nil {
					w.acked[ref] = append(w.acked[ref], id)
				} else {
					w.fails++
				}
				w.mu.Unlock()
				if err != nil {
					testLogger.Info("write", "ref", ref.String(), "err", err)
					time.Sleep(10 * time.Millisecond) // an election is under way: no event to wait on
				}
			}
		}()
	}
	return w
}

func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ids := range w.acked {
		n += len(ids)
	}
	return n
}

// waitProgress waits until n more writes are acknowledged.
func (c *realCluster) waitProgress(w *writers, what string, n int) {
	c.t.Helper()
	before := w.count()
	waitCond(c.t, what, func() bool { return w.count() >= before+n })
}

// waitInSync waits until id is in every bucket's in-sync set.
func (c *realCluster) waitInSync(id string) {
	c.t.Helper()
	waitCond(c.t, id+" rejoins every in-sync set", func() bool {
		for _, ref := range c.refs {
			if !slices.Contains(c.bucket(ref).ISR, id) {
				return false
			}
		}
		return true
	})
}

// check verifies, once writes have stopped, that every acknowledged batch
// is in the leader's log below its high watermark exactly once and that
// every live replica holds the same bytes up to it; it returns how many
// acknowledged batches were missing and how many were there twice or more.
func (c *realCluster) check(w *writers) (lost, duplicated int) {
	t := c.t
	for _, ref := range c.refs {
		st := c.bucket(ref)
		leader := c.node(st.Leader)
		if leader == nil {
			t.Fatalf("%s has no live leader: %+v", ref, st)
		}
		hw := leader.tl.HighWatermark(int(ref.Bucket))
		ids := readIDs(t, leader.tl, int(ref.Bucket), hw)
		w.mu.Lock()
		for _, id := range w.acked[ref] {
			switch n := count(ids, id); {
			case n == 0:
				lost++
				t.Errorf("%s: acknowledged batch %d is not in the log", ref, id)
			case n > 1:
				duplicated++
				t.Errorf("%s: acknowledged batch %d is in the log %d times", ref, id, n)
			}
		}
		w.mu.Unlock()
		lb := replicaBytes(t, leader.tl, int(ref.Bucket), hw)
		c.mu.Lock()
		nodes := maps.Clone(c.nodes)
		c.mu.Unlock()
		for id, n := range nodes {
			waitCond(t, id+" reaches the high watermark", func() bool { return n.tl.Bucket(int(ref.Bucket)).Durable() >= hw })
			if got := replicaBytes(t, n.tl, int(ref.Bucket), hw); !bytes.Equal(got, lb) {
				t.Errorf("%s: %s's bytes up to %d differ from the leader %s's", ref, id, hw, st.Leader)
			}
		}
	}
	return lost, duplicated
}

// Three nodes replicate a two-bucket table's real logs over gRPC while
// writers append to each bucket's leader; each bucket's leader is killed
// in turn and restarted from its directory. Every acknowledged batch is in
// the final log exactly once, and all replicas hold the same bytes up to
// the high watermark.
func TestRealLogsReplicateThroughFailovers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newRealCluster(t, ctx)
	w := c.startWriters()
	c.waitProgress(w, "writes acknowledged", 20)
	for _, ref := range []BucketRef{c.refs[0], c.refs[1], c.refs[0]} {
		old := c.bucket(ref).Leader
		c.kill(old)
		c.waitProgress(w, "writes go on after the leader died", 20)
		c.revive(old)
		c.waitInSync(old)
	}
	w.stop()
	w.wg.Wait()
	c.check(w)
}

// faultNet is which replication links are cut: (from, to) pairs.
type faultNet struct {
	mu  sync.Mutex
	cut map[[2]string]bool
}

func (f *faultNet) set(from, to string, cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[[2]string{from, to}] = cut
}

func (f *faultNet) isCut(from, to string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut[[2]string{from, to}]
}

// faultTransport is a node's replication client through the faultNet: a
// cut link fails the call before it is sent or loses its answer.
type faultTransport struct {
	self  string
	inner *GRPCTransport
	net   *faultNet
	addrs *sync.Map // node id -> address
}

func (f *faultTransport) addr(id string) (string, error) {
	if f.net.isCut(f.self, id) || f.net.isCut(id, f.self) {
		return "", fmt.Errorf("link %s-%s is cut", f.self, id)
	}
	a, ok := f.addrs.Load(id)
	if !ok {
		return "", fmt.Errorf("no address for %s", id)
	}
	return a.(string), nil
}

func (f *faultTransport) Fetch(ctx context.Context, to string, q FetchRequest) (FetchResponse, error) {
	addr, err := f.addr(to)
	if err != nil {
		return FetchResponse{}, err
	}
	resp, err := f.inner.Fetch(ctx, addr, q)
	if _, cut := f.addr(to); err == nil && cut != nil {
		return FetchResponse{}, cut // cut while the fetch waited: the answer is lost
	}
	return resp, err
}

func (f *faultTransport) EndForEpoch(ctx context.Context, to string, q EpochRequest) (EpochResponse, error) {
	addr, err := f.addr(to)
	if err != nil {
		return EpochResponse{}, err
	}
	return f.inner.EndForEpoch(ctx, addr, q)
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
