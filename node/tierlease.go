package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lakestream/lakestream/cluster/meta"
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
// metadata store, by a node holding a replica of every bucket of the
// table, so that the committer reads each bucket from its own replica.
type committerLeases struct{ r *replication }

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
	if !mayCommit(buckets, c.r.self, held, c.r.draining(c.r.self)) {
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
// a table whose buckets are these: it holds a replica of every bucket, so
// that it reads every bucket from its own log up to its high watermark
// (reading another node's replica instead is not built), and not be
// draining (a node about to stop, or decommissioned: it gives the lease
// up, so that another node goes on before it stops). To take the lease it
// must also be in every bucket's in-sync set; to keep it, a replica of
// each suffices, so that a lease does not move with every short lag. A
// table whose buckets are not placed yet has no committer.
func mayCommit(buckets []meta.Bucket, self string, held, draining bool) bool {
	if len(buckets) == 0 || draining {
		return false
	}
	for _, b := range buckets {
		if !slices.Contains(b.Replicas, self) {
			return false
		}
		if !held && !slices.Contains(b.ISR, self) {
			return false
		}
	}
	return true
}
