package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/cluster/meta"
	"github.com/lakestream/lakestream/tables"
)

// Distributed reads (docs/cluster.md, "Distributed queries"): the query
// engine's read of a table reads each bucket this node holds in sync
// itself, and each other bucket from a node that does, over the
// replication service (cluster.GRPCTransport.Scan, served by
// tables.Store.ServeRemote). replication is the node's tables.Remote.

var _ tables.Remote = (*replication)(nil)

// RemoteBuckets lists the buckets of a table this node is not in the
// in-sync set of, as the metadata store holds them, each with its in-sync
// replicas to read from: the leader first (it has the newest high
// watermark), then the others in placement order. A bucket without any
// in-sync replica is listed with none, and its read fails naming it.
func (r *replication) RemoteBuckets(ctx context.Context, tableID int64) ([]tables.RemoteBucket, error) {
	bs, err := r.store.Buckets(ctx, tableID)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil // not placed yet: this node's (empty) replicas are the table
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the cluster's metadata store: %v", tables.ErrReplicaUnavailable, err)
	}
	var out []tables.RemoteBucket
	for _, b := range bs {
		if slices.Contains(b.ISR, r.self) {
			continue
		}
		out = append(out, tables.RemoteBucket{Bucket: int(b.Key.Bucket), Nodes: readOrder(b)})
	}
	return out, nil
}

// ServesAll says whether this node's replica of every bucket of the table
// had, at its last assignment, this node in its in-sync set.
func (r *replication) ServesAll(tableID int64, buckets int) bool {
	for b := range buckets {
		a, ok := r.reps.Role(cluster.BucketRef{TableID: tableID, Bucket: int32(b)})
		if !ok || !slices.Contains(a.ISR, r.self) {
			return false
		}
	}
	return true
}

// readOrder is the order in which a bucket's in-sync replicas are asked
// for a remote read: its leader, then the others as placed.
func readOrder(b meta.Bucket) []string {
	var nodes []string
	if b.Leader != "" && slices.Contains(b.ISR, b.Leader) {
		nodes = append(nodes, b.Leader)
	}
	for _, id := range b.Replicas {
		if id != b.Leader && slices.Contains(b.ISR, id) {
			nodes = append(nodes, id)
		}
	}
	return nodes
}

// ReadRemote reads rb from the first of its nodes that is alive (gossip)
// and answers; a node that cannot be reached, or refuses as unavailable,
// before any frame came is passed over for the next. With none left the
// error wraps tables.ErrReplicaUnavailable and names every node and why.
func (r *replication) ReadRemote(ctx context.Context, rb tables.RemoteBucket, req []byte, frame func([]byte) error) error {
	var tried []string
	for _, id := range rb.Nodes {
		addr := r.addr(id)
		if addr == "" || !r.gossipLive(id) {
			tried = append(tried, fmt.Sprintf("node %s is not alive", id))
			continue
		}
		err := r.tr.Scan(ctx, addr, req, frame)
		if err == nil {
			return nil
		}
		started := errors.Is(err, cluster.ErrScanStarted)
		if !started && ctx.Err() == nil && retryOnAnother(err) {
			tried = append(tried, fmt.Sprintf("node %s at %s: %v", id, addr, status.Convert(err).Message()))
			continue
		}
		if s, ok := status.FromError(err); ok && !started {
			// The serving node's refusal, with its code: it says what
			// went wrong there.
			return status.Errorf(s.Code(), "bucket %d on node %s at %s: %s", rb.Bucket, id, addr, s.Message())
		}
		return fmt.Errorf("bucket %d on node %s at %s: %w", rb.Bucket, id, addr, err)
	}
	if len(rb.Nodes) == 0 {
		return fmt.Errorf("%w: bucket %d has no in-sync replica", tables.ErrReplicaUnavailable, rb.Bucket)
	}
	return fmt.Errorf("%w: bucket %d: %s", tables.ErrReplicaUnavailable, rb.Bucket, strings.Join(tried, "; "))
}

// retryOnAnother says whether a read that failed before anything came may
// be asked of another replica: the node could not be reached, or is not
// ready to serve it.
func retryOnAnother(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Unimplemented:
		return true
	}
	return false
}

// gossipLive says whether gossip sees node id alive (or suspect): a node
// seen failed is not asked. It does not ask the metadata store, as the
// controller's liveness does: a read asks a node gossip has not yet seen
// fail, and passes over it when the call fails.
func (r *replication) gossipLive(id string) bool {
	m := r.members()
	if m == nil {
		return false
	}
	for _, mb := range m.Live() {
		if mb.ID == id {
			return true
		}
	}
	return false
}

// serveScan is the node's cluster.ScanSource: another node's remote read
// of this node's replica, with its errors as gRPC statuses.
func serveScan(store *tables.Store) cluster.ScanSource {
	return func(ctx context.Context, req []byte, send func([]byte) error) error {
		err := store.ServeRemote(ctx, req, send)
		if err == nil {
			return nil
		}
		if _, ok := status.FromError(err); ok {
			return err
		}
		code := codes.Unknown
		switch {
		case errors.Is(err, context.Canceled):
			code = codes.Canceled
		case errors.Is(err, context.DeadlineExceeded):
			code = codes.DeadlineExceeded
		case errors.Is(err, tables.ErrBadRemoteQuery):
			code = codes.InvalidArgument
		case errors.Is(err, catalog.ErrTableNotFound):
			code = codes.NotFound
		case errors.Is(err, tables.ErrReplicaUnavailable), errors.Is(err, tables.ErrCaptureRace):
			code = codes.Unavailable
		case errors.Is(err, tables.ErrHistoryUnavailable):
			code = codes.FailedPrecondition
		}
		return status.Error(code, err.Error())
	}
}
