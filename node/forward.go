package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/cluster"
	"github.com/lakestream/lakestream/tables"
)

// Writes sent to any node (docs/cluster.md): the tables package splits a
// write by bucket and stores each bucket's part on its leader; this file
// carries the parts of buckets another node leads over the replication
// transport (cluster/forward.go) and stores those other nodes forward here.

// leaderTTL is how long a bucket's leader read from the metadata store is
// used, on a node without a replica of the bucket (a replica knows its
// leader from the assignments it follows). A refusal drops it at once.
const leaderTTL = time.Second

type cachedLeader struct {
	id, addr string
	until    time.Time
}

// serveForwards makes this node store the parts other nodes forward to it.
// A forwarded statement runs with stmt.
func (r *replication) serveForwards(store *tables.Store, stmt func(ctx context.Context, tableID int64, b int, sql string) (int64, error)) {
	r.reps.HandleForward(func(ctx context.Context, q cluster.ForwardRequest) (cluster.ForwardResponse, error) {
		if q.Kind == cluster.KindStatement {
			n, err := stmt(ctx, q.TableID, int(q.Bucket), string(q.Body))
			if errors.Is(err, tables.ErrNotTaken) {
				return cluster.ForwardResponse{Code: cluster.ForwardRefused, Message: err.Error()}, nil
			}
			return cluster.ForwardResponse{Rows: n}, err
		}
		res, err := store.WriteForwarded(ctx, tables.ForwardedPart{TableID: q.TableID, Bucket: int(q.Bucket),
			SchemaID: q.SchemaID, Upsert: q.Kind == cluster.KindUpsert,
			Writer: tables.Writer{ID: q.WriterID, Seq: q.WriterSeq}, Body: q.Body})
		if errors.Is(err, tables.ErrNotTaken) {
			return cluster.ForwardResponse{Code: cluster.ForwardRefused, Message: err.Error()}, nil
		}
		if err != nil {
			return cluster.ForwardResponse{}, err
		}
		return cluster.ForwardResponse{Rows: res.Rows, Duplicate: res.Duplicate}, nil
	})
}

// Forward sends a part to its bucket's leader as this node knows it.
func (r *replication) Forward(ctx context.Context, p tables.ForwardedPart) (tables.ForwardResult, error) {
	key := ref(p.TableID, p.Bucket)
	id, addr, err := r.leaderOf(ctx, key)
	if err != nil {
		return tables.ForwardResult{}, err
	}
	kind := cluster.KindBatches
	switch {
	case p.Statement:
		kind = cluster.KindStatement
	case p.Upsert:
		kind = cluster.KindUpsert
	}
	resp, err := r.tr.Forward(ctx, addr, cluster.ForwardRequest{BucketRef: key, SchemaID: p.SchemaID, Kind: kind,
		WriterID: p.Writer.ID, WriterSeq: p.Writer.Seq, Body: p.Body})
	switch {
	case err != nil && ctx.Err() == nil && unreachable(err):
		r.forgetLeader(key)
		return tables.ForwardResult{}, fmt.Errorf("%w: forward to the leader, node %s at %s: %w", tables.ErrReplicaUnavailable, id, addr, err)
	case err != nil:
		return tables.ForwardResult{}, err // the write's own error, with its code
	case resp.Code == cluster.ForwardRefused:
		r.forgetLeader(key)
		return tables.ForwardResult{}, fmt.Errorf("%w: %w: node %s refused it: %s", tables.ErrReplicaUnavailable, tables.ErrNotTaken, id, resp.Message)
	}
	return tables.ForwardResult{Rows: resp.Rows, Duplicate: resp.Duplicate}, nil
}

// unreachable says that a forward failed for want of the leader: it could
// not be reached, or answered that it is not available (it lost the
// leadership while the part waited for its replicas, or is stopping).
func unreachable(err error) bool {
	st, ok := status.FromError(err)
	return !ok || st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded
}

// leaderOf is the bucket's leader and its address: from this node's
// replica of the bucket, else from the metadata store.
func (r *replication) leaderOf(ctx context.Context, key cluster.BucketRef) (id, addr string, err error) {
	if a, ok := r.reps.Role(key); ok && a.Leader != "" && a.Leader != r.self && a.LeaderAddr != "" {
		return a.Leader, a.LeaderAddr, nil
	}
	now := time.Now()
	r.leaders.Lock()
	c, ok := r.leaders.m[key]
	r.leaders.Unlock()
	if ok && now.Before(c.until) {
		return c.id, c.addr, nil
	}
	b, err := r.store.Bucket(ctx, key)
	if err != nil {
		return "", "", fmt.Errorf("%w: find the leader of table %d bucket %d: %w", tables.ErrReplicaUnavailable, key.TableID, key.Bucket, err)
	}
	id = b.Leader
	if id == "" {
		return "", "", fmt.Errorf("%w: %w: table %d bucket %d has no leader now (no in-sync replica is alive)", tables.ErrReplicaUnavailable, tables.ErrNotTaken, key.TableID, key.Bucket)
	}
	if addr = r.addr(id); addr == "" {
		return "", "", fmt.Errorf("%w: %w: the leader of table %d bucket %d, node %s, is not a member this node sees", tables.ErrReplicaUnavailable, tables.ErrNotTaken, key.TableID, key.Bucket, id)
	}
	if id == r.self {
		// The store names this node before its replica has applied the
		// assignment: the part is sent again once it has.
		return "", "", fmt.Errorf("%w: %w: this node leads table %d bucket %d from the next assignment on", tables.ErrReplicaUnavailable, tables.ErrNotTaken, key.TableID, key.Bucket)
	}
	r.leaders.Lock()
	r.leaders.m[key] = cachedLeader{id: id, addr: addr, until: now.Add(leaderTTL)}
	r.leaders.Unlock()
	return id, addr, nil
}

func (r *replication) forgetLeader(key cluster.BucketRef) {
	r.leaders.Lock()
	delete(r.leaders.m, key)
	r.leaders.Unlock()
}
