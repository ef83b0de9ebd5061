package columnarlog

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Replication (Options.Replicated). Each bucket of a replicated table has a
// leader, which appends with Append, and followers, which fetch the
// leader's batches (NewReplicaReader on the leader) and store them with
// AppendReplica: the same bytes at the same offsets. The network, and who
// leads, belong to the caller; the log keeps per bucket:
//
//   - the leader-epoch history (epochs.go), from which a follower finds
//     where its log diverges from a new leader's (EndForEpoch), and
//     Truncate, which cuts it there;
//   - the high watermark (SetHighWatermark): the offset below which the
//     in-sync replicas hold every batch. Readers (Committed, CommittedEnds,
//     NewReader, Notify) see rows only below it; followers fetch up to the
//     durable end (Durable, DurableEnds, NewReplicaReader, NotifyDurable).
//
// Invariant: committed <= high watermark <= durable end, per bucket.
// Committed and the high watermark never move back; the durable end moves
// back only by Truncate, and never below the high watermark.

// ErrTruncated is returned by a reader whose next offset Truncate cut.
var ErrTruncated = errors.New("log truncated below the reader")

// AppendReplica stores batches the bucket's leader wrote, as they are:
// header and bytes unchanged. Each must be a whole batch that passes its
// checks (both CRCs, sizes), the first must start at the bucket's end and
// each at the end of the one before, and their leader epochs and commit
// timestamps must not decrease, nor be below the log's last ones. A batch
// of a new epoch extends the epoch history, durably, before it is written.
// AppendReplica returns once the batches are durable and committed (a
// commit round), so that recovery keeps them; they are then readable by a
// replica reader at once, and by other readers once the high watermark
// covers them. A refused batch changes nothing.
//
// Before it fetches from the leader of a new epoch, a follower truncates
// its log where it diverges from the leader's (Divergence, Truncate). That
// also drops a last epoch it led without appending, which would otherwise
// fence the new leader's older batches.
func (t *TableLog) AppendReplica(bucket int, batches []Batch) error {
	if !t.opts.Replicated {
		return fmt.Errorf("append replica to bucket %d: the table is not replicated", bucket)
	}
	if bucket < 0 || bucket >= len(t.buckets) {
		return fmt.Errorf("append replica to bucket %d: the table has %d buckets", bucket, len(t.buckets))
	}
	for _, b := range batches {
		if len(b) > t.opts.MaxBatchBytes {
			return fmt.Errorf("append replica to bucket %d: %d bytes: %w (limit %d)", bucket, len(b), ErrBatchTooLarge, t.opts.MaxBatchBytes)
		}
		if err := b.Check(); err != nil {
			return fmt.Errorf("append replica to bucket %d: %w", bucket, err)
		}
	}
	if len(batches) == 0 {
		return nil
	}
	seq, err := t.writeReplica(bucket, batches)
	if err != nil {
		return err
	}
	err = t.commit.wait(seq, t.commitRound)
	t.inflight.Add(-1)
	return err
}

// writeReplica writes the batches to bucket b under the table lock, as
// write does a write's parts, and returns the write's sequence number.
func (t *TableLog) writeReplica(b int, batches []Batch) (int64, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.err != nil {
		if err := t.repairLocked(); err != nil {
			return 0, err
		}
	}
	l := t.buckets[b]
	if wrote, err := l.writeReplica(batches); err != nil {
		if wrote {
			// What was written is above t.written, not committed: the
			// table refuses writes until a repair cuts it.
			t.err = fmt.Errorf("bucket %d: %w", b, err)
			return 0, t.err
		}
		return 0, fmt.Errorf("append replica to bucket %d: %w", b, err)
	}
	t.written[b] = l.end()
	t.seq++
	t.inflight.Add(1)
	return t.seq, nil
}

// writeReplica checks the batches against the log's end, epoch and commit
// timestamp, then writes them unchanged. wrote says that the log changed:
// a failure after it leaves a tail to cut.
func (l *Log) writeReplica(batches []Batch) (wrote bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return false, err
	}
	next, epoch, ts := l.mu.next, l.lastEpochLocked(), l.mu.lastTS
	for _, b := range batches {
		switch {
		case b.BaseOffset() != next:
			return false, fmt.Errorf("batch at offset %d, the log ends at %d: %w", b.BaseOffset(), next, ErrOffsetOutOfRange)
		case b.LeaderEpoch() < epoch:
			return false, fmt.Errorf("batch at offset %d has leader epoch %d, the log has %d: %w", next, b.LeaderEpoch(), epoch, ErrFencedEpoch)
		case b.CommitTimestamp() < ts:
			return false, fmt.Errorf("batch at offset %d has commit timestamp %d, before the log's last %d", next, b.CommitTimestamp(), ts)
		}
		next, epoch, ts = b.NextOffset(), b.LeaderEpoch(), b.CommitTimestamp()
	}
	for _, b := range batches {
		if err := l.noteEpochLocked(b.LeaderEpoch(), b.BaseOffset()); err != nil {
			return wrote, err
		}
		wrote = true
		if err := l.storeLocked(b); err != nil {
			return true, err
		}
	}
	return true, nil
}

// Truncate cuts bucket b back to offset to: a batch boundary at or above
// the bucket's start and its high watermark (its committed end in a table
// that is not replicated), at or below its end. It drops the epoch-history
// entries that start at or above to, and is durable on return: the commit
// file is rewritten first, so that recovery cuts the bucket there too if
// a crash interrupts the cut. It waits for the writes in flight to commit
// first. Readers are not disturbed (they stay below the high watermark); a
// replica reader past to returns ErrTruncated.
func (t *TableLog) Truncate(b int, to int64) error {
	if b < 0 || b >= len(t.buckets) {
		return fmt.Errorf("truncate bucket %d: the table has %d buckets", b, len(t.buckets))
	}
	if err := t.settle(); err != nil {
		return fmt.Errorf("truncate bucket %d to %d: %w", b, to, err)
	}
	defer t.wmu.Unlock()
	t.hmu.Lock() // the high watermark stays where it is checked
	defer t.hmu.Unlock()
	l := t.buckets[b]
	if err := l.checkCut(to); err != nil {
		return fmt.Errorf("truncate bucket %d to %d: %w", b, to, err)
	}
	ends := slices.Clone(t.DurableEnds())
	if ends[b] != to {
		ends[b] = to
		if err := t.rewriteCommitFile(t.seq, ends); err != nil {
			// The file may be replaced and not durable: the next write
			// repairs the log, rewriting it.
			t.err = fmt.Errorf("truncate bucket %d to %d: %w", b, to, err)
			return t.err
		}
	}
	err := l.cut(to)
	// The commit file names to: a cut that failed half way leaves the log
	// refusing writes until the next write repairs it, cutting it there.
	t.written[b] = to
	t.durable.Store(&ends)
	if err != nil {
		t.err = fmt.Errorf("truncate bucket %d to %d: %w", b, to, err)
		return t.err
	}
	return nil
}

// settle returns with t.wmu held once no write waits for a commit round,
// committing those that do. A log that refuses writes is repaired first.
func (t *TableLog) settle() error {
	for {
		t.wmu.Lock()
		if t.err != nil {
			if err := t.repairLocked(); err != nil {
				t.wmu.Unlock()
				return err
			}
		}
		seq := t.seq
		t.commit.mu.Lock()
		done, cerr := t.commit.done >= seq, t.commit.err
		t.commit.mu.Unlock()
		if done {
			return nil
		}
		t.wmu.Unlock()
		if cerr != nil {
			return cerr
		}
		if err := t.commit.wait(seq, t.commitRound); err != nil {
			return err
		}
	}
}

// checkCut checks that Truncate may cut the log to offset to.
func (l *Log) checkCut(to int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if to < l.mu.start || to > l.mu.next {
		return fmt.Errorf("the log holds [%d, %d): %w", l.mu.start, l.mu.next, ErrOffsetOutOfRange)
	}
	if c := l.committed.Load(); to < c {
		return fmt.Errorf("below the high watermark %d: %w", c, ErrOffsetOutOfRange)
	}
	segs := l.mu.segments
	s := segs[sort.Search(len(segs), func(i int) bool { return segs[i].base > to })-1]
	if _, next, err := l.walkTo(s, to); err != nil {
		return err
	} else if next != to {
		return fmt.Errorf("offset %d is inside the batch ending at %d: %w", to, next, ErrOffsetOutOfRange)
	}
	return nil
}

// cut truncates the log to offset to for Truncate, with no reader reading:
// readers past to see the cut (Reader.Next) and end with ErrTruncated. It
// drops the epochs starting at or above to.
func (l *Log) cut(to int64) error {
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.cuts = append(l.mu.cuts, to)
	l.cutGen.Store(int64(len(l.mu.cuts)))
	if to < l.mu.next || l.mu.err != nil {
		if err := l.truncateLocked(to); err != nil {
			return err
		}
	}
	return l.cutEpochsLocked(to, true)
}
