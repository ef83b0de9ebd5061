package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/membership"
	"github.com/lakestream/lakestream/tables"
)

// Defaults of the replication of a cluster's buckets (docs/cluster.md).
const (
	defaultBucketReplicas = 3 // bucket.replicas
	defaultMinInsync      = 2 // min.insync.replicas
	// watchEvery is how often a node polls the metadata store's change
	// counter for new assignments.
	watchEvery = 50 * time.Millisecond
	// nodeLeaseTTL is the length of a node's own lease in the metadata
	// store, renewed every nodeLeaseEvery: the controller takes a node
	// whose lease expired for failed, whatever gossip says yet (Kafka's
	// brokers hold such a session with their controller). It bounds how
	// long a failed leader goes unnoticed; gossip, with the `lan` timing,
	// takes 4–24 s.
	nodeLeaseTTL   = 1500 * time.Millisecond
	nodeLeaseEvery = 250 * time.Millisecond
	// controllerLeaseTTL is the controller lease's length: how long the
	// cluster is without a controller when its holder fails.
	controllerLeaseTTL = 2 * time.Second
	// checkpointEvery is how often the high watermarks are written to
	// disk: a follower that restarts starts from its checkpoint, and
	// learns the rest from its leader.
	checkpointEvery = time.Second
)

// openCatalog opens the table definitions: in the PostgreSQL database of
// --meta when the node is a member of a cluster whose metadata store is
// one (every node shares them), else in the SQLite file of the data
// directory. It returns where they are.
func (n *Node) openCatalog(ctx context.Context) (*catalog.Catalog, string, error) {
	cfg := n.cfg
	ccfg := catalog.Config{DefaultBucketNum: cfg.DefaultBuckets, Logger: cfg.Logger}
	if cfg.Cluster.enabled() && catalog.IsPostgresURL(cfg.Cluster.Meta) {
		n.catChanged = make(chan struct{}, 1)
		ccfg.OnChange = func() {
			select {
			case n.catChanged <- struct{}{}:
			default: // a sync is due already
			}
		}
		cat, err := catalog.OpenPostgres(ctx, cfg.Cluster.Meta, ccfg)
		return cat, "the cluster's metadata database", err
	}
	cat, err := catalog.Open(ctx, cfg.metaPath(), ccfg)
	return cat, cfg.metaPath(), err
}

// followCatalog keeps the node's tables in step with a shared catalog:
// it polls the catalog for other nodes' changes and opens the tables they
// created, drops those they dropped (tables.Store.Sync). The returned
// channel is closed once both loops ended with ctx. Without a shared
// catalog it does nothing.
func (n *Node) followCatalog(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if n.catChanged == nil {
		close(done)
		return done
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := n.cat.Watch(ctx); err != nil && !errors.Is(err, catalog.ErrClosed) {
			n.cfg.Logger.Error("following the shared catalog", "error", err)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-n.catChanged:
				if err := n.store.Sync(ctx); err != nil && ctx.Err() == nil {
					n.cfg.Logger.Warn("opening the tables other nodes changed", "error", err)
				}
			}
		}
	}()
	go func() { wg.Wait(); close(done) }()
	return done
}

// replication is the node's part of the cluster's data plane
// (docs/cluster.md): it holds a replica of each bucket of every table,
// runs the role the metadata store assigns it (leader or follower), takes
// part in the controller's election, and answers the tables' questions
// before and after each write (tables.Replication).
type replication struct {
	self    string
	store   meta.Store
	reps    *cluster.Replicas
	tr      *cluster.GRPCTransport
	members func() *membership.Membership // nil until gossip starts
	logger  *slog.Logger

	// lease is this node's own lease (nodeLeaseTTL), held while it runs.
	lease struct {
		sync.Mutex
		held  meta.Lease
		ok    bool
		alive map[string]leaseSeen // other nodes' leases as last read, by node id or lease name (drain.go)
	}
	stats clusterStats // cluster_metrics.go
	// leaders are the leaders of buckets this node has no replica of, as
	// read from the store to forward writes (forward.go).
	leaders struct {
		sync.Mutex
		m map[cluster.BucketRef]cachedLeader
	}

	mu   sync.Mutex
	logs map[int64]openTable // by table id
	// wake asks the watch to apply the stored assignments now: a table
	// opened, and its new replicas wait for their roles.
	wake chan struct{}

	stop func() // ends the background loops and waits for them
}

type openTable struct {
	def *catalog.Table
	log *columnarlog.TableLog
}

// metaURI is the metadata store: the --meta value, or the embedded SQLite
// file in the data directory.
func (c *Config) metaURI() string {
	if c.Cluster.Meta != "" {
		return c.Cluster.Meta
	}
	return "sqlite://" + filepath.Join(c.DataDir, "cluster.db")
}

// openMetaStore opens the metadata store that uri names: postgres:// or
// postgresql:// for a PostgreSQL database, sqlite:// for a file.
func openMetaStore(ctx context.Context, uri string) (meta.Store, error) {
	switch {
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return meta.OpenPostgres(ctx, uri)
	case strings.HasPrefix(uri, "sqlite://"):
		return meta.OpenSQLite(strings.TrimPrefix(uri, "sqlite://"))
	}
	return nil, fmt.Errorf("metadata store %q: want postgres://… or sqlite://…", uri)
}

// newReplication opens the metadata store and the node's replicas; nothing
// runs until start.
func newReplication(ctx context.Context, cfg Config, dial []grpc.DialOption, members func() *membership.Membership) (*replication, error) {
	store, err := openMetaStore(ctx, cfg.metaURI())
	if err != nil {
		return nil, fmt.Errorf("cluster metadata: %w", err)
	}
	tr := cluster.NewGRPCTransport(dial...) // clustertls.go: mutual TLS when configured
	r := &replication{self: cfg.Cluster.NodeID, store: store, tr: tr, members: members, logger: cfg.Logger, logs: map[int64]openTable{}, wake: make(chan struct{}, 1)}
	r.leaders.m = map[cluster.BucketRef]cachedLeader{}
	r.reps, err = cluster.NewReplicas(cluster.Config{NodeID: cfg.Cluster.NodeID, Logger: cfg.Logger}, tr, r.isrChange(cluster.StoreISRChange(store, cfg.Cluster.NodeID)))
	if err != nil {
		return nil, errors.Join(err, tr.Close(), closeStore(store))
	}
	return r, nil
}

func closeStore(s meta.Store) error {
	if c, ok := s.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// start places the buckets of tables that have none in the store (tables
// of the node from before it joined a cluster), then runs the controller
// (elections and in-sync set changes, on the node that holds the
// controller lease), the watch that applies the store's assignments to
// this node's replicas, and the high-watermark checkpoints; it serves
// replication, and other nodes' remote reads from scans, on g.
func (r *replication) start(ctx context.Context, g *grpc.Server, scans cluster.ScanSource) error {
	r.mu.Lock()
	defs := make([]*catalog.Table, 0, len(r.logs))
	for _, t := range r.logs {
		defs = append(defs, t.def)
	}
	r.mu.Unlock()
	for _, def := range defs {
		have, err := r.store.Buckets(ctx, def.ID)
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return fmt.Errorf("cluster metadata: %w", err)
		}
		if len(have) == 0 {
			if err := r.Created(ctx, def); err != nil {
				return err
			}
		}
	}
	if err := r.clearDrainMark(ctx); err != nil { // drain.go
		return err
	}
	if err := r.renewLease(ctx); err != nil {
		return err
	}
	cluster.Register(g, r.reps, scans)
	loops, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(loops) }()
	}
	ctl := &cluster.Controller{Self: r.self, Store: r.store, Alive: r.alive, Draining: r.draining,
		Decommissioned: r.decommissioned, Nodes: r.moveTargets, Want: r.wantReplicas, // drain.go
		LeaseTTL: controllerLeaseTTL, Logger: r.logger, Decided: r.decided}
	run(r.holdLease)
	run(ctl.Run)
	run(func(ctx context.Context) {
		cluster.Watch(ctx, r.store, r.reps, r.minInsync, r.addr, watchEvery, r.wake)
	})
	run(r.checkpoints)
	r.stop = func() { cancel(); wg.Wait() }
	return nil
}

// nodeLease is the name of node id's own lease.
func nodeLease(id string) string { return "node/" + id }

// renewLease takes or renews the node's own lease (held under the node's
// id: a node restarted after a crash renews the lease it held).
func (r *replication) renewLease(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, nodeLeaseTTL)
	defer cancel()
	l, err := r.store.AcquireLease(ctx, nodeLease(r.self), r.self, nodeLeaseTTL)
	if err != nil {
		return fmt.Errorf("node lease: %w", err)
	}
	r.lease.Lock()
	r.lease.held, r.lease.ok = l, true
	r.lease.Unlock()
	return nil
}

// holdLease renews the node's lease every nodeLeaseEvery until ctx ends,
// then releases it: a node that stops gracefully is seen gone at once.
func (r *replication) holdLease(ctx context.Context) {
	tick := time.NewTicker(nodeLeaseEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.lease.Lock()
			l, ok := r.lease.held, r.lease.ok
			r.lease.ok = false
			r.lease.Unlock()
			if ok {
				rctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if err := r.store.ReleaseLease(rctx, l); err != nil && !errors.Is(err, meta.ErrNotFound) {
					r.logger.Warn("release the node lease", "error", err)
				}
				cancel()
			}
			return
		case <-tick.C:
			if err := r.renewLease(ctx); err != nil && ctx.Err() == nil {
				r.logger.Warn("renew the node lease", "error", err)
			}
		}
	}
}

// leaseSeen is another node's lease as last read.
type leaseSeen struct {
	at   time.Time // when it was read
	live bool
}

// leaseLive says whether node id holds its lease: read from the store at
// most every nodeLeaseEvery/2 per node (the controller asks per bucket).
func (r *replication) leaseLive(id string) bool {
	r.lease.Lock()
	seen, ok := r.lease.alive[id]
	r.lease.Unlock()
	if ok && time.Since(seen.at) < nodeLeaseEvery/2 {
		return seen.live
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeLeaseTTL)
	defer cancel()
	l, err := r.store.Lease(ctx, nodeLease(id))
	live := true // a store that does not answer says nothing of the node
	switch {
	case errors.Is(err, meta.ErrNotFound):
		live = false
	case err == nil:
		live = l.Holder == id
	}
	r.lease.Lock()
	if r.lease.alive == nil {
		r.lease.alive = map[string]leaseSeen{}
	}
	r.lease.alive[id] = leaseSeen{time.Now(), live}
	r.lease.Unlock()
	return live
}

// shutdown stops the loops and every replica's role, then checkpoints the
// high watermarks (the tables close after it).
func (r *replication) shutdown() {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	r.reps.Close()
	r.checkpoint()
}

// release closes the transport and the metadata store, once the tables
// are closed.
func (r *replication) release() error {
	return errors.Join(r.tr.Close(), closeStore(r.store))
}

// alive says whether a node is alive: gossip sees it alive or suspect,
// and it holds its node lease. This node is alive.
func (r *replication) alive(id string) bool {
	if id == r.self {
		return true
	}
	m := r.members()
	if m == nil {
		return false
	}
	for _, mb := range m.Live() {
		if mb.ID == id {
			return r.leaseLive(id)
		}
	}
	return false
}

// addr is a node's replication address: its advertised Flight address.
func (r *replication) addr(id string) string {
	m := r.members()
	if m == nil {
		return ""
	}
	for _, mb := range m.Members() {
		if mb.ID == id {
			return mb.Flight
		}
	}
	return ""
}

// minInsync is a bucket's min.insync.replicas: the table's option, else
// 2, at most its replicas (a bucket placed on one node when one node was
// alive takes writes).
func (r *replication) minInsync(b meta.Bucket) int {
	n := defaultMinInsync
	r.mu.Lock()
	t, ok := r.logs[b.Key.TableID]
	r.mu.Unlock()
	if ok && t.def.Options.MinInsyncReplicas > 0 {
		return t.def.Options.MinInsyncReplicas // as the table says, even if it can never be met
	}
	return min(n, len(b.Replicas))
}

// checkpoints writes the high watermarks every checkpointEvery.
func (r *replication) checkpoints(ctx context.Context) {
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			r.checkpoint()
		}
	}
}

func (r *replication) checkpoint() {
	r.mu.Lock()
	logs := make([]openTable, 0, len(r.logs))
	for _, t := range r.logs {
		logs = append(logs, t)
	}
	r.mu.Unlock()
	for _, t := range logs {
		if err := t.log.CheckpointHighWatermarks(); err != nil && !errors.Is(err, columnarlog.ErrClosed) {
			r.logger.Warn("checkpoint high watermarks", "table", t.def.FullName(), "error", err)
		}
	}
}

func ref(tableID int64, b int) cluster.BucketRef {
	return cluster.BucketRef{TableID: tableID, Bucket: int32(b)}
}

// Opened registers each bucket of the table's log as a replica; its role
// comes with the store's assignment.
func (r *replication) Opened(def *catalog.Table, log *columnarlog.TableLog) error {
	var errs []error
	for b := range log.Buckets() {
		errs = append(errs, r.reps.Add(ref(def.ID, b), cluster.BucketLog(log, b)))
	}
	if err := errors.Join(errs...); err != nil {
		for b := range log.Buckets() {
			r.reps.Remove(ref(def.ID, b))
		}
		return err
	}
	r.mu.Lock()
	r.logs[def.ID] = openTable{def, log}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // a wake is pending already
	}
	return nil
}

// Closing stops the table's buckets' roles.
func (r *replication) Closing(def *catalog.Table) {
	r.mu.Lock()
	t, ok := r.logs[def.ID]
	delete(r.logs, def.ID)
	r.mu.Unlock()
	if !ok {
		return
	}
	for b := range t.log.Buckets() {
		r.reps.Remove(ref(def.ID, b))
	}
	if err := t.log.CheckpointHighWatermarks(); err != nil {
		r.logger.Warn("checkpoint high watermarks", "table", def.FullName(), "error", err)
	}
}

// Created places the new table's buckets over the live nodes and stores
// them, then applies this node's assignments at once, so that a write
// right after CREATE TABLE finds its leader.
func (r *replication) Created(ctx context.Context, def *catalog.Table) error {
	var nodes []membership.Node
	if m := r.members(); m != nil {
		for _, mb := range m.Live() {
			if !r.decommissioned(mb.ID) { // drain.go
				nodes = append(nodes, membership.Node{ID: mb.ID, Rack: mb.Rack})
			}
		}
	} else {
		nodes = []membership.Node{{ID: r.self}}
	}
	n := def.Options.BucketReplicas
	if n == 0 {
		n = defaultBucketReplicas
	}
	buckets := make([]meta.Bucket, def.Options.BucketNum)
	for b := range buckets {
		buckets[b] = cluster.Place(ref(def.ID, b), n, nodes)
	}
	err := r.store.CreateBuckets(ctx, buckets)
	if err != nil && !errors.Is(err, meta.ErrExists) { // ErrExists: another node placed them
		return fmt.Errorf("place the buckets of %s: %w", def.FullName(), err)
	}
	stored, err := r.store.Buckets(ctx, def.ID)
	if err != nil {
		return fmt.Errorf("place the buckets of %s: %w", def.FullName(), err)
	}
	var errs []error
	for _, b := range stored {
		for _, id := range b.Replicas {
			if id == r.self {
				errs = append(errs, r.reps.Apply(cluster.AssignmentOf(b, r.minInsync(b), r.addr)))
			}
		}
	}
	r.logger.Info("table buckets placed", "table", def.FullName(), "buckets", len(stored), "replicas", n)
	return errors.Join(errs...)
}

// Dropped removes the table's buckets from the store.
func (r *replication) Dropped(ctx context.Context, def *catalog.Table) error {
	if err := r.store.DeleteTable(ctx, def.ID); err != nil && !errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("remove the buckets of %s: %w", def.FullName(), err)
	}
	return nil
}

// Leads says whether this node leads the bucket.
func (r *replication) Leads(tableID int64, b int) bool {
	a, ok := r.reps.Role(ref(tableID, b))
	return ok && a.Leader == r.self
}

// BeforeWrite refuses a write this node cannot take, naming the bucket's
// leader when another node leads it.
func (r *replication) BeforeWrite(tableID int64, b int) error {
	if err := r.reps.BeforeWrite(ref(tableID, b)); err != nil {
		return r.unavailable(tableID, b, err)
	}
	return nil
}

// WaitAcked waits until the bucket's in-sync replicas hold the write.
func (r *replication) WaitAcked(ctx context.Context, tableID int64, b int, end int64) error {
	if err := r.reps.WaitAcked(ctx, ref(tableID, b), end); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return r.unavailable(tableID, b, err)
	}
	return nil
}

// unavailable wraps a refusal of the cluster as tables.ErrReplicaUnavailable,
// with where the bucket's leader is, as far as this node knows.
func (r *replication) unavailable(tableID int64, b int, err error) error {
	a, ok := r.reps.Role(ref(tableID, b))
	if !ok {
		// A replica that is not open (yet, or any more: a node stopping
		// after its hand-off) has no role: the store says who leads.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		stored, serr := r.store.Bucket(ctx, ref(tableID, b))
		cancel()
		if serr != nil || stored.Leader == "" || stored.Leader == r.self {
			return fmt.Errorf("%w: %w (this node has no assignment for the bucket yet)", tables.ErrReplicaUnavailable, err)
		}
		a = cluster.AssignmentOf(stored, 0, r.addr)
	}
	switch {
	case a.Leader == "":
		return fmt.Errorf("%w: %w (the bucket has no leader now: no in-sync replica is alive)", tables.ErrReplicaUnavailable, err)
	case a.Leader != r.self:
		return fmt.Errorf("%w: %w (its leader is node %s at %s)", tables.ErrReplicaUnavailable, err, a.Leader, a.LeaderAddr)
	}
	return fmt.Errorf("%w: %w", tables.ErrReplicaUnavailable, err)
}
