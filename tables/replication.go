package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
)

// Replication makes the store's bucket logs replicas of a cluster's
// buckets (docs/cluster.md): Config.Replication. The store tells it of
// each table's log as it opens and closes, and asks it before and after
// each write; the cluster decides who leads each bucket and when a write
// is held by enough replicas. Without it (a single node) a write is
// acknowledged once it is durable on this node.
type Replication interface {
	// Opened is told of a table's log once it is open (at start-up, on
	// CREATE TABLE, when a table another node created appears). The log was
	// opened with columnarlog.Options.Replicated. An error quarantines
	// the table.
	Opened(def *catalog.Table, log *columnarlog.TableLog) error
	// Closing is told before a table's log closes (DROP, shutdown): its
	// buckets stop replicating.
	Closing(def *catalog.Table)
	// Created is told of a table this node created, once its log is open:
	// the cluster places its buckets. An error undoes the CREATE.
	Created(ctx context.Context, def *catalog.Table) error
	// Dropped is told of a table this node dropped, once the catalog no
	// longer has it.
	Dropped(ctx context.Context, def *catalog.Table) error
	// Leads says whether this node leads bucket b of the table: a write
	// without a bucket key goes to the buckets this node leads.
	Leads(tableID int64, b int) bool
	// BeforeWrite refuses, before anything is appended, a write to bucket
	// b that this node cannot take: it does not lead the bucket, or too
	// few replicas are in sync. The error wraps ErrReplicaUnavailable.
	BeforeWrite(tableID int64, b int) error
	// WaitAcked returns once the bucket's in-sync replicas hold its log
	// up to end, so that the write that ended there may be acknowledged.
	// The error wraps ErrReplicaUnavailable when the node lost the
	// leadership first (the write may or may not survive: the client
	// retries, and an idempotent writer's retry writes nothing twice).
	WaitAcked(ctx context.Context, tableID int64, b int, end int64) error
	// Forward sends a part of a write to its bucket's leader, which
	// stores it with Store.WriteForwarded (forward.go). A refusal that
	// took nothing wraps ErrNotTaken and ErrReplicaUnavailable; a leader
	// that cannot be reached, or that lost the leadership while the part
	// waited for its replicas, wraps ErrReplicaUnavailable; the leader's
	// other errors are the write's own.
	Forward(ctx context.Context, p ForwardedPart) (ForwardResult, error)
}

// ErrReplicaUnavailable refuses a write that the cluster cannot take
// here now: this node does not lead the bucket, too few of its replicas
// are in sync, or the leadership moved while the write waited for its
// replicas. Retrying (on the bucket's leader) may succeed.
var ErrReplicaUnavailable = errors.New("replica unavailable")

// bucketFor picks the bucket of a write without a bucket key: round-robin
// over all buckets on a single node, over the buckets this node leads in
// a cluster (all of them when it leads none: the write is then refused
// naming the first).
func (t *Table) bucketFor(n int) int {
	r := t.store.cfg.Replication
	if r == nil {
		return int(t.rr.Add(1) % uint64(n))
	}
	id := t.Def().ID
	var led [64]int
	leading := led[:0]
	for b := 0; b < n; b++ {
		if r.Leads(id, b) {
			leading = append(leading, b)
		}
	}
	if len(leading) == 0 {
		return int(t.rr.Add(1) % uint64(n))
	}
	return leading[int(t.rr.Add(1)%uint64(len(leading)))]
}

// beforeWrite asks the cluster whether each bucket of the write can be
// written here.
func (t *Table) beforeWrite(def *catalog.Table, parts [][]columnarlog.Batch) error {
	r := t.store.cfg.Replication
	if r == nil {
		return nil
	}
	for b, p := range parts {
		if len(p) == 0 {
			continue
		}
		if err := r.BeforeWrite(def.ID, b); err != nil {
			return fmt.Errorf("write to %s bucket %d: nothing was written: %w", def.FullName(), b, err)
		}
	}
	return nil
}

// waitAcked waits until the in-sync replicas hold every bucket's part of
// a write.
func (t *Table) waitAcked(ctx context.Context, def *catalog.Table, parts [][]columnarlog.Batch, res [][]columnarlog.AppendResult) error {
	r := t.store.cfg.Replication
	if r == nil {
		return nil
	}
	for b, p := range parts {
		if len(p) == 0 {
			continue
		}
		var end int64
		for i, batch := range p {
			end = max(end, res[b][i].BaseOffset+int64(batch.RecordCount()))
		}
		if err := r.WaitAcked(ctx, def.ID, b, end); err != nil {
			return fmt.Errorf("write to %s bucket %d: %w", def.FullName(), b, err)
		}
	}
	return nil
}

// waitWriterAcked waits until the in-sync replicas hold the batches of a
// writer's call in the log: the call was appended by an earlier send.
func (t *Table) waitWriterAcked(ctx context.Context, def *catalog.Table, w Writer) error {
	r := t.store.cfg.Replication
	if r == nil {
		return nil
	}
	for _, b := range t.log.WriterBatches(w.ID) {
		if b.Seq != w.Seq {
			continue
		}
		if err := r.WaitAcked(ctx, def.ID, b.Bucket, b.End); err != nil {
			return fmt.Errorf("write to %s bucket %d: %w", def.FullName(), b.Bucket, err)
		}
	}
	return nil
}
