package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/membership"
)

// A node that stops gracefully hands its leaderships off first, and a node
// being decommissioned gives its replicas up (docs/cluster.md, "Rolling
// restart" and "Decommission"). Both are marks in the metadata store that
// the controller's decisions (cluster.Decide) honour: leases, so that they
// need no table of their own, and carry the store's change counter.
const (
	// drainMarkTTL is how long a stopping node's mark lives: past its
	// stop, so that the controller takes the stopped node out of the
	// in-sync sets (it stopped on purpose), and short enough that a node
	// that crashed while draining is an ordinary member again soon after
	// it returns (it also drops its mark when it starts).
	drainMarkTTL = 60 * time.Second
	// drainPoll is how often a draining node checks what it still leads.
	drainPoll = 50 * time.Millisecond
)

// DrainLease is the name of the lease that marks node id as stopping.
func DrainLease(id string) string { return "drain/" + id }

// DecommissionLease is the name of the lease that marks node id as
// decommissioned: its replicas move to other nodes. It is held under the
// node's id for DecommissionTTL, until `lakestream cluster recommission`
// takes it off.
func DecommissionLease(id string) string { return "decommission/" + id }

// DecommissionTTL is a decommission mark's length: a century.
const DecommissionTTL = 100 * 365 * 24 * time.Hour

// draining says whether node id hands its leaderships off: it marked
// itself stopping, or it is decommissioned. Read from the store at most
// every nodeLeaseEvery/2 per node, as leaseLive.
func (r *replication) draining(id string) bool {
	return r.marked(DrainLease(id), id) || r.marked(DecommissionLease(id), id)
}

// decommissioned says whether node id is marked decommissioned.
func (r *replication) decommissioned(id string) bool { return r.marked(DecommissionLease(id), id) }

// marked says whether lease name is held by id, as last read; a store that
// does not answer says nothing new, so the last reading stands (none: not
// marked).
func (r *replication) marked(name, id string) bool {
	r.lease.Lock()
	seen, ok := r.lease.alive[name]
	r.lease.Unlock()
	if ok && time.Since(seen.at) < nodeLeaseEvery/2 {
		return seen.live
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeLeaseTTL)
	defer cancel()
	l, err := r.store.Lease(ctx, name)
	held := seen.live
	switch {
	case errors.Is(err, meta.ErrNotFound):
		held = false
	case err == nil:
		held = l.Holder == id
	}
	r.lease.Lock()
	if r.lease.alive == nil {
		r.lease.alive = map[string]leaseSeen{}
	}
	r.lease.alive[name] = leaseSeen{time.Now(), held}
	r.lease.Unlock()
	return held
}

// clearDrainMark drops the stopping mark this node left at its last stop:
// a node that starts takes leaderships again.
func (r *replication) clearDrainMark(ctx context.Context) error {
	l, err := r.store.Lease(ctx, DrainLease(r.self))
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the node's drain mark: %w", err)
	}
	if err := r.store.ReleaseLease(ctx, l); err != nil && !errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("drop the node's drain mark: %w", err)
	}
	return nil
}

// handOff is the first step of a graceful stop: the node marks itself
// stopping, the controller moves the leadership of each bucket it leads
// to an in-sync replica, and the node waits, at most timeout, until it
// leads nothing — writes to those buckets are then refused UNAVAILABLE
// with the new leader's address, and the clients' retries go there. Then
// it stops replicating: its roles end and its node lease is released, and
// the controller takes it out of the in-sync sets at once, so that the
// leaders' acknowledgements do not wait for it. A bucket with no other
// replica alive, in sync and not draining keeps this node as leader until
// it stops (and is then offline until an in-sync replica returns): the
// wait ends as soon as only such buckets are left, with a warning naming
// them, and at the timeout in any case.
func (r *replication) handOff(timeout time.Duration) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := r.store.AcquireLease(ctx, DrainLease(r.self), r.self, drainMarkTTL); err != nil {
		r.logger.Warn("mark the node as stopping: leaderships are not handed off", "error", err)
		r.shutdown()
		return
	}
	led, movable := r.leading(ctx)
	r.logger.Info("handing leaderships off", "buckets", len(led))
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for movable > 0 {
		select {
		case <-ctx.Done():
			r.logger.Warn("stopping while still leading: the hand-off did not finish in time", "buckets", fmt.Sprint(led), "waited", timeout)
			r.shutdown()
			return
		case <-tick.C:
		}
		led, movable = r.leading(ctx)
	}
	if len(led) > 0 {
		r.logger.Warn("stopping while still leading: no other replica is alive and in sync", "buckets", fmt.Sprint(led))
	} else {
		r.logger.Info("leaderships handed off", "took", time.Since(start).Round(time.Millisecond))
	}
	r.shutdown()
}

// leading lists the buckets this node leads, in the store or still in its
// own replicas (an election it has not applied yet: writes that it
// acknowledges before it applies it must end first), and counts those
// whose leadership can move: another replica is alive, in sync and not
// draining (cluster.HandOffTarget), or the store has already moved it.
func (r *replication) leading(ctx context.Context) (led []string, movable int) {
	all, err := r.store.AllBuckets(ctx)
	if err != nil {
		return []string{"(the metadata store does not answer: " + err.Error() + ")"}, 1
	}
	view := cluster.View{Alive: r.alive, Draining: r.draining}
	for _, b := range all {
		a, ok := r.reps.Role(b.Key)
		if b.Leader != r.self && (!ok || a.Leader != r.self) {
			continue
		}
		led = append(led, b.Key.String())
		if b.Leader != r.self || cluster.HandOffTarget(b, view) != "" {
			movable++
		}
	}
	return led, movable
}

// moveTargets are the nodes a decommissioned node's replicas may move to:
// live, neither draining nor decommissioned.
func (r *replication) moveTargets() []membership.Node {
	m := r.members()
	if m == nil {
		return nil
	}
	var out []membership.Node
	for _, mb := range m.Live() {
		if r.alive(mb.ID) && !r.draining(mb.ID) {
			out = append(out, membership.Node{ID: mb.ID, Rack: mb.Rack})
		}
	}
	return out
}

// wantReplicas is a bucket's replica count: its table's bucket.replicas
// (default 3), or as many as it has when this node does not know the
// table.
func (r *replication) wantReplicas(b meta.Bucket) int {
	r.mu.Lock()
	t, ok := r.logs[b.Key.TableID]
	r.mu.Unlock()
	switch {
	case !ok:
		return len(b.Replicas)
	case t.def.Options.BucketReplicas > 0:
		return t.def.Options.BucketReplicas
	}
	return defaultBucketReplicas
}
