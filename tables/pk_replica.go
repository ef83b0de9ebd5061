package tables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/tables/keyindex"
)

// The key index of a replicated primary-key table (Config.Replication;
// docs/cluster.md, "Primary-key tables").
//
// Invariant: each bucket's key index covers an offset that was at or
// below the bucket's high watermark when the index got there. Its rows are
// therefore held by the in-sync replicas and are never cut by a truncation
// (columnarlog.TableLog.Truncate never goes below the high watermark), so
// a leadership change never has to roll the index back; and reads and
// lookups, which the index answers, see only rows below the high
// watermark, on every node.
//
// The index follows the high watermark:
//   - a leader applies a write to the index once WaitAcked returned (the
//     in-sync replicas hold it, its high watermark covers it), under p.mu,
//     which it holds from the index lookup to then: two writes of a key
//     never interleave;
//   - every replica (leader or follower) applies, in the background, the
//     change records that the high watermark moves over and its index has
//     not (followLog): a follower's copies of the leader's writes, a write
//     whose acknowledgement failed and that became committed after all;
//   - before a leader writes to a bucket whose log holds records above its
//     index (a write whose wait for the replicas failed, or the tail of an
//     earlier leader's epoch that this leader's log holds), it waits until
//     its in-sync replicas hold that tail too and applies it (readyLocked):
//     a write reads the key's current row from an index that covers the
//     whole log it appends to. Meanwhile writes wait (the client's deadline
//     bounds the wait; a failed wait is ErrReplicaUnavailable, retried).
//
// A write whose wait for the replicas fails leaves the index as it was:
// the records stay in the log above the index, and are applied once the
// high watermark covers them, or cut by the truncation of a new leader's
// followers, never having reached the index.

// followRetry is how long the background catch-up waits after a failure
// before it tries again (a failure also marks the index stale: the next
// read or write resyncs it).
const followRetry = time.Second

// replicated reports whether the table's buckets are replicas of a
// cluster's.
func (p *pkTable) replicated() bool { return p.t.store.cfg.Replication != nil }

// raiseHighWatermarks moves each bucket's high watermark up to the offset
// its key index covers, as the table opens: the checkpoint of the high
// watermarks lags, the index was at most at the high watermark when it got
// there (see above), and reads must not see a state whose records above
// the checkpoint are missing from the log's readable part. An index ahead
// of the log's durable end is rebuilt by resync.
func (p *pkTable) raiseHighWatermarks() {
	for b := range p.t.log.Buckets() {
		covered, err := p.idx.Covered(b)
		if err != nil || covered > p.t.log.Bucket(b).Durable() {
			continue // resync reads it again and rebuilds
		}
		p.t.log.SetHighWatermark(b, covered)
	}
}

// startFollow starts, for a replicated table, one goroutine per bucket
// that applies to the index what the high watermark moves over; close
// stops them.
func (p *pkTable) startFollow() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for b := range p.t.log.Buckets() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.followLog(ctx, b)
		}()
	}
	p.stopFollow = func() { cancel(); wg.Wait() }
}

// followLog keeps bucket b's index at the bucket's high watermark until
// ctx ends.
func (p *pkTable) followLog(ctx context.Context, b int) {
	l := p.t.log.Bucket(b)
	for {
		wake := l.Notify()
		var retry <-chan time.Time
		if st := p.state.Load(); p.stale.Load() || (st != nil && st.ends[b] < l.Committed()) {
			p.mu.Lock()
			err := p.catchUpLocked(ctx, b, l.Committed())
			p.mu.Unlock()
			if err != nil && ctx.Err() == nil && !errors.Is(err, ErrKeyIndexRebuilding) {
				p.t.store.cfg.Logger.Warn("key index catch-up with the high watermark failed; retrying", "table", p.t.Name(), "bucket", b, "error", err)
				retry = time.After(followRetry)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-retry:
		}
	}
}

// catchUp brings every bucket's index up to its high watermark now: a
// retried idempotent call is acknowledged once its rows are readable here.
func (p *pkTable) catchUp(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ends := p.t.log.CommittedEnds()
	for b, end := range ends {
		if err := p.catchUpLocked(ctx, b, end); err != nil {
			return err
		}
	}
	return nil
}

// catchUpLocked applies bucket b's change records from where its index
// is up to offset to (at most the high watermark: the log's readers stop
// there) and publishes the state. A stale index is resynced instead.
func (p *pkTable) catchUpLocked(ctx context.Context, b int, to int64) error {
	if p.stale.Load() || p.state.Load() == nil {
		return p.resyncLocked(ctx)
	}
	old := p.state.Load()
	if old.ends[b] >= to {
		return nil
	}
	def := p.t.Def()
	lay, err := p.layout(def)
	if err != nil {
		return err
	}
	live, err := p.advance(ctx, lay, b, old.ends[b], to, old.live[b])
	if err != nil {
		// The index may have moved past the published state: the next
		// operation resyncs both from the log.
		p.stale.Store(true)
		return fmt.Errorf("table %s bucket %d: key index: %w", def.FullName(), b, err)
	}
	st := &pkState{ends: slices.Clone(old.ends), live: slices.Clone(old.live)}
	st.ends[b], st.live[b] = to, live
	p.state.Store(st)
	return nil
}

// advance applies the change records of bucket b in [from, to) to the
// index, one index batch per log batch, and returns live edited as they
// say: an insert or update after makes its record live and its key's
// previous record not, a delete makes its key's record not live. The
// previous records are read from the index, once per log batch (a write
// changes a key once per bucket, in one batch).
func (p *pkTable) advance(ctx context.Context, lay *pkLayout, b int, from, to int64, live *liveSet) (*liveSet, error) {
	all := make([]int, lay.schema.NumFields())
	for i := range all {
		all[i] = i
	}
	dec := newDecoder(lay.def, all, p.t.mem)
	rp := newReplayer(lay, p.idx.NewBatch(b, 1<<20))
	ed := live.edit()
	var keys, sorted [][]byte
	cur := map[string]int64{}
	err := p.t.ReadBatches(ctx, Range{Bucket: b, From: from, To: to}, func(lb columnarlog.Batch) error {
		cts, err := lb.ChangeTypes()
		if err != nil {
			return err
		}
		rec, err := dec.decode(lb)
		if err != nil {
			return err
		}
		defer rec.Release()
		cols := rec.Columns()
		lo, hi := max(from, lb.BaseOffset()), min(to, lb.NextOffset())
		keys, sorted = keys[:0], sorted[:0]
		for off := lo; off < hi; off++ {
			k := lay.key(nil, cols, int(off-lb.BaseOffset()))
			keys = append(keys, k)
			sorted = append(sorted, k)
		}
		slices.SortFunc(sorted, bytes.Compare)
		sorted = slices.CompactFunc(sorted, bytes.Equal)
		clear(cur)
		err = p.idx.Get(b, sorted, func(i int, e keyindex.Entry) error {
			cur[string(sorted[i])] = e.Offset
			return nil
		})
		if err != nil {
			return err
		}
		for j, off := 0, lo; off < hi; j, off = j+1, off+1 {
			i := int(off - lb.BaseOffset())
			ct := columnarlog.AppendOnly
			if cts != nil {
				ct = columnarlog.ChangeType(cts[i])
			}
			k := string(keys[j])
			switch ct {
			case columnarlog.Insert, columnarlog.UpdateAfter, columnarlog.AppendOnly:
				if prev, ok := cur[k]; ok {
					ed.clear(prev)
				}
				ed.set(off)
				cur[k] = off
			case columnarlog.Delete:
				if prev, ok := cur[k]; ok {
					ed.clear(prev)
					delete(cur, k)
				}
			}
			rp.apply(cols, i, off, ct)
		}
		return rp.batch.Commit(hi)
	})
	return ed.done(), err
}

// readyLocked makes a replicated table's index ready for a write to the
// buckets used, on this node, before the write reads it: the node must
// lead each bucket with enough replicas in sync, and a log tail above the
// index (see above) must be held by the in-sync replicas and applied.
// Nothing is written when it fails.
func (p *pkTable) readyLocked(ctx context.Context, def *catalog.Table, used []int) error {
	r := p.t.store.cfg.Replication
	if r == nil {
		return nil
	}
	for _, b := range used {
		if err := r.BeforeWrite(def.ID, b); err != nil {
			return fmt.Errorf("write to %s bucket %d: nothing was written: %w", def.FullName(), b, err)
		}
		end := p.t.log.Bucket(b).Durable()
		if p.state.Load().ends[b] >= end {
			continue
		}
		if err := r.WaitAcked(ctx, def.ID, b, end); err != nil {
			return fmt.Errorf("write to %s bucket %d: nothing was written: the key index waits for the replicas to hold the log up to %d: %w", def.FullName(), b, end, err)
		}
		if err := p.catchUpLocked(ctx, b, end); err != nil {
			return err
		}
		if got := p.state.Load().ends[b]; got < end {
			return fmt.Errorf("write to %s bucket %d: nothing was written: %w: the key index covers the log up to %d of %d", def.FullName(), b, ErrReplicaUnavailable, got, end)
		}
	}
	return nil
}
