package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

// ControllerLease is the name of the controller's lease in the metadata
// store.
const ControllerLease = "controller"

// Controller runs on every node; the one that holds the controller lease
// applies Decide to every bucket, the others keep trying to take the lease
// over. Its writes are compare-and-sets on each bucket's version, so a
// controller that lost its lease without knowing it changes nothing that
// moved on since it read it.
type Controller struct {
	Self  string
	Store meta.Store
	// Alive says whether a node is alive (membership: alive or suspect).
	Alive func(id string) bool
	// Draining says whether a node hands its leaderships off (View); nil:
	// none does.
	Draining func(id string) bool
	// Decommissioned says whether a node's replicas move away (Reassign);
	// Nodes lists the nodes they may move to (live, neither draining nor
	// decommissioned) and Want a bucket's replica count. nil
	// Decommissioned: no replica moves.
	Decommissioned func(id string) bool
	Nodes          func() []membership.Node
	Want           func(meta.Bucket) int
	// LeaseTTL is the controller lease's length; the holder renews it every
	// Every. Default 3s.
	LeaseTTL time.Duration
	// Every is how often the controller decides. Default 200ms.
	Every  time.Duration
	Logger *slog.Logger
	// Decided, when set, hears of every decision stored, with the bucket
	// before and after it (the node counts elections and in-sync set
	// changes from it).
	Decided func(before, after meta.Bucket)

	held meta.Lease // the controller lease as last taken; zero when none
}

// Run decides until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 3 * time.Second
	}
	if c.Every == 0 {
		c.Every = 200 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	tick := time.NewTicker(c.Every)
	defer tick.Stop()
	for {
		if err := c.Step(ctx); err != nil && ctx.Err() == nil {
			c.Logger.Warn("controller", "error", err)
		}
		select {
		case <-ctx.Done():
			c.release()
			return
		case <-tick.C:
		}
	}
}

// release gives the controller lease up, if this node holds it: a node
// that stops gracefully leaves the cluster without a controller for no
// longer than the others' next pass, not the lease's ttl.
func (c *Controller) release() {
	if c.held.Holder == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Store.ReleaseLease(ctx, c.held); err != nil && !errors.Is(err, meta.ErrNotFound) {
		c.Logger.Warn("release the controller lease", "error", err)
	}
	c.held = meta.Lease{}
}

// Step takes or renews the lease and, holding it, decides every bucket
// once. It reports how many buckets it changed through the log only.
func (c *Controller) Step(ctx context.Context) error {
	lease, err := c.Store.AcquireLease(ctx, ControllerLease, c.Self, c.LeaseTTL)
	if errors.Is(err, meta.ErrLeaseHeld) {
		c.held = meta.Lease{}
		return nil // another node controls
	}
	if err != nil {
		return fmt.Errorf("controller lease: %w", err)
	}
	c.held = lease
	buckets, err := c.Store.AllBuckets(ctx)
	if err != nil {
		return fmt.Errorf("controller: read buckets: %w", err)
	}
	var errs []error
	var nodes []membership.Node // read once a pass, when a replica has to move
	for _, b := range buckets {
		if time.Now().After(lease.Expires) {
			return errors.Join(append(errs, errors.New("controller lease expired during a pass"))...)
		}
		next, ok := Decide(b, View{Alive: c.Alive, Draining: c.Draining})
		if !ok && c.Decommissioned != nil && slices.ContainsFunc(b.Replicas, c.Decommissioned) {
			if nodes == nil && c.Nodes != nil {
				nodes = c.Nodes()
			}
			next, ok = Reassign(b, c.Decommissioned, c.Want(b), nodes)
		}
		if !ok {
			continue
		}
		stored, err := c.Store.UpdateBucket(ctx, next)
		if err != nil {
			if !errors.Is(err, meta.ErrConflict) { // someone wrote first: decide again next pass
				errs = append(errs, fmt.Errorf("%s: %w", b.Key, err))
			}
			continue
		}
		if c.Decided != nil {
			c.Decided(b, stored)
		}
		c.Logger.Info("bucket decided", "bucket", b.Key.String(), "leader", next.Leader, "epoch", next.Epoch, "was", b.Leader, "isr", next.ISR, "replicas", next.Replicas)
	}
	return errors.Join(errs...)
}

// StoreISRChange is the ISRChange of a bucket this node leads: a
// compare-and-set of the in-sync set on the version the leader computed it
// from, refused when the store moved on (another change, another epoch or
// leader: the leader's view is stale).
func StoreISRChange(store meta.Store, self string) func(BucketRef) ISRChange {
	return func(ref BucketRef) ISRChange {
		return func(ctx context.Context, epoch int32, base int64, isr []string) (int64, error) {
			b, err := store.Bucket(ctx, ref)
			if err != nil {
				return 0, err
			}
			if b.Version != base || b.Epoch != epoch || b.Leader != self {
				return 0, fmt.Errorf("%s is at version %d, epoch %d, led by %q; the proposal is of version %d, epoch %d, by %q: %w",
					ref, b.Version, b.Epoch, b.Leader, base, epoch, self, meta.ErrConflict)
			}
			b.ISR = slices.Clone(isr)
			stored, err := store.UpdateBucket(ctx, b)
			if err != nil {
				return 0, err
			}
			return stored.Version, nil
		}
	}
}

// Watch applies the metadata store's assignments to the node's replicas:
// it polls the store's change counter every `every` and, when it moved,
// reads every bucket and applies those this node holds a replica of; it
// also applies them every 25 polls, for a leader whose address gossip
// learnt only since. minISR gives a bucket's min.insync.replicas; addr
// gives a node's replication address (its advertised Flight address), ""
// while unknown. A receive on wake applies every bucket at once (the node
// added a replica: a table opened); nil never wakes.
func Watch(ctx context.Context, store meta.Store, r *Replicas, minISR func(meta.Bucket) int, addr func(id string) string, every time.Duration, wake <-chan struct{}) {
	last := int64(-1)
	tick := time.NewTicker(every)
	defer tick.Stop()
	woken := false
	for polls := 0; ; polls++ {
		if n, err := store.Changes(ctx); err == nil && (n != last || polls%25 == 0 || woken) {
			if err := applyAll(ctx, store, r, minISR, addr); err == nil {
				last = n
			} else if ctx.Err() == nil {
				r.cfg.Logger.Warn("apply bucket assignments", "error", err)
			}
		}
		woken = false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
			woken = true
		}
	}
}

func applyAll(ctx context.Context, store meta.Store, r *Replicas, minISR func(meta.Bucket) int, addr func(id string) string) error {
	buckets, err := store.AllBuckets(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range buckets {
		if !r.holds(b.Key) {
			continue
		}
		if !slices.Contains(b.Replicas, r.cfg.NodeID) {
			// The replica moved away (Reassign): its role ends.
			if a, ok := r.Role(b.Key); ok && a.Epoch < b.Epoch && slices.Contains(a.Replicas, r.cfg.NodeID) {
				errs = append(errs, r.Apply(Assignment{Ref: b.Key, Replicas: b.Replicas, Epoch: b.Epoch, ISR: b.ISR, Version: b.Version}))
			}
			continue
		}
		errs = append(errs, r.Apply(AssignmentOf(b, minISR(b), addr)))
	}
	return errors.Join(errs...)
}

// AssignmentOf is the assignment of bucket b as stored, with its
// min.insync.replicas and its leader's address (addr).
func AssignmentOf(b meta.Bucket, minISR int, addr func(id string) string) Assignment {
	a := Assignment{Ref: b.Key, Replicas: b.Replicas, Leader: b.Leader, Epoch: b.Epoch, ISR: b.ISR, MinISR: minISR, Version: b.Version}
	if b.Leader != "" {
		a.LeaderAddr = addr(b.Leader)
	}
	return a
}

// holds says whether the node has a replica of ref.
func (r *Replicas) holds(ref BucketRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.buckets[ref] != nil
}
