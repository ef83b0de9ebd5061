package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/tables"
	"github.com/lakestream/lakestream/tiering"
)

// committerLeaseTTL is how long a table's lake committer lease lasts
// without renewal (tiering.LeaseEvery): a committer killed with kill -9 is
// replaced within about that.
const committerLeaseTTL = 4 * tiering.LeaseEvery

// CommitterLease is the name of the lake committer lease of a table in
// the metadata store (docs/cluster.md#tiering-in-a-cluster).
func CommitterLease(tableID int64) string { return "tier/" + strconv.FormatInt(tableID, 10) }

// committerLeases are the lake committer leases of a cluster node whose
// lake the nodes share (tiering.Leases): a table's lease is held in the
// metadata store by one node (mayCommit). The committer reads the buckets
// it holds no in-sync replica of from other nodes (tiering/remote.go),
// but for a primary-key table, whose rounds need the key state of a
// replica of every bucket here.
type committerLeases struct {
	r *replication
	// primaryKey says whether a table has a primary key; nil: none has.
	primaryKey func(ctx context.Context, tableID int64) bool
	// eligible says whether another node may hold a lease: live and not
	// draining; nil: replication's view.
	eligible func(id string) bool
}

// newCommitterLeases are the committer leases of r's node, whose tables
// are in store.
func newCommitterLeases(r *replication, store *tables.Store) committerLeases {
	return committerLeases{r: r, primaryKey: func(ctx context.Context, id int64) bool {
		t, err := store.ByID(ctx, id)
		// A table this node cannot open now is taken as keyed: the old
		// rule holds until it can.
		return err != nil || t.Def().HasPrimaryKey()
	}}
}

func (c committerLeases) otherEligible(id string) bool {
	if c.eligible != nil {
		return c.eligible(id)
	}
	return c.r.alive(id) && !c.r.draining(id)
}

// Acquire takes or renews the table's lease when this node may commit it
// (mayCommit), and gives it up when it no longer may.
func (c committerLeases) Acquire(ctx context.Context, tableID int64) (tiering.Lease, bool, error) {
	name := CommitterLease(tableID)
	cur, err := c.r.store.Lease(ctx, name)
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return tiering.Lease{}, false, err
	}
	held := err == nil && cur.Holder == c.r.self
	if err == nil && !held {
		return tiering.Lease{}, false, nil // another node's, live
	}
	buckets, err := c.r.store.Buckets(ctx, tableID)
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return tiering.Lease{}, false, err
	}
	pk := c.primaryKey != nil && c.primaryKey(ctx, tableID)
	if !mayCommit(buckets, c.r.self, held, c.r.draining(c.r.self), pk, c.otherEligible) {
		if held {
			if err := c.r.store.ReleaseLease(ctx, cur); err != nil && !errors.Is(err, meta.ErrNotFound) {
				return tiering.Lease{}, false, fmt.Errorf("give the lake committer lease up: %w", err)
			}
		}
		return tiering.Lease{}, false, nil
	}
	l, err := c.r.store.AcquireLease(ctx, name, c.r.self, committerLeaseTTL)
	if errors.Is(err, meta.ErrLeaseHeld) {
		return tiering.Lease{}, false, nil
	}
	if err != nil {
		return tiering.Lease{}, false, err
	}
	return tiering.Lease{TableID: tableID, Token: l.Token, Expires: l.Expires}, true, nil
}

// Release gives the lease up, if this node still holds it.
func (c committerLeases) Release(ctx context.Context, l tiering.Lease) error {
	err := c.r.store.ReleaseLease(ctx, meta.Lease{Name: CommitterLease(l.TableID), Holder: c.r.self, Token: l.Token})
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	return err
}

// mayCommit says whether node self may hold the lake committer lease of
// a table whose buckets are these. A draining node may not (a node about
// to stop, or decommissioned: it gives the lease up, so that another node
// goes on before it stops), and a table whose buckets are not placed yet
// has no committer. Otherwise a node holding it keeps it, and a node may
// take it when it is in the in-sync set of every bucket, or else when no
// other node that is eligible (live, not draining) is in the in-sync sets
// of more buckets (of as many: a smaller id), so that the committer reads
// as few buckets from other nodes as it can.
//
// A primary-key table (pk) keeps the rule of a committer reading every
// bucket here: it takes the lease only in every bucket's in-sync set, and
// keeps it while it holds a replica of each (a lease does not move with
// every short lag).
func mayCommit(buckets []meta.Bucket, self string, held, draining, pk bool, eligible func(id string) bool) bool {
	if len(buckets) == 0 || draining {
		return false
	}
	inSync := map[string]int{}
	for _, b := range buckets {
		for _, id := range b.ISR {
			inSync[id]++
		}
	}
	if inSync[self] == len(buckets) {
		return true
	}
	if pk {
		if !held {
			return false
		}
		for _, b := range buckets {
			if !slices.Contains(b.Replicas, self) {
				return false
			}
		}
		return true
	}
	if held {
		return true
	}
	for id, n := range inSync {
		if id == self || !eligible(id) {
			continue
		}
		if n > inSync[self] || n == inSync[self] && id < self {
			return false
		}
	}
	return true
}
