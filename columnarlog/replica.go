package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path"
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

// SetHighWatermark moves bucket b's high watermark up to hw, capped at its
// durable end and taken down to the start of the batch holding hw: readers
// then see its rows below hw. It never moves back (a
// lower hw is ignored), and does nothing in a table that is not replicated,
// whose high watermark is its committed end. It does no I/O: the caller
// persists the high watermarks now and then with CheckpointHighWatermarks
// (Close does too).
func (t *TableLog) SetHighWatermark(b int, hw int64) {
	if !t.opts.Replicated {
		return
	}
	t.hmu.Lock()
	defer t.hmu.Unlock()
	l := t.buckets[b]
	if !l.raiseHighWatermark(hw) {
		return
	}
	ends := slices.Clone(t.CommittedEnds())
	ends[b] = l.Committed()
	t.ends.Store(&ends)
}

// HighWatermark is bucket b's high watermark: its Committed.
func (t *TableLog) HighWatermark(b int) int64 { return t.buckets[b].Committed() }

// raiseHighWatermark moves the high watermark up to hw, capped at the
// durable end, and committed with it; it reports whether committed moved.
// Under l.mu, so that a cut (which holds it) never sees it move.
func (l *Log) raiseHighWatermark(hw int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	hw = min(hw, l.durable.Load())
	if hw <= l.hw.Load() {
		return false
	}
	hw, err := l.boundaryAtOrBelowLocked(hw)
	if err != nil {
		// A damaged header: readers report it where they meet it.
		l.opts.Logger.Warn("high watermark not moved", "dir", l.dir, "error", err)
		return false
	}
	raise(&l.hw, hw)
	before := l.committed.Load()
	l.refreshCommitted()
	return l.committed.Load() != before
}

// boundaryAtOrBelowLocked returns the start of the batch holding offset
// off, or off itself at the log's end: readers stop at batch boundaries,
// and a high watermark inside a batch would have them stop in it. The
// high watermarks a leader computes are its followers' ends, boundaries
// already; then it reads the headers from the index entry before off.
func (l *Log) boundaryAtOrBelowLocked(off int64) (int64, error) {
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > off }) - 1
	if i < 0 || off >= l.mu.next || off == segs[i].base {
		return off, nil
	}
	s := segs[i]
	pos, next := l.seek(s, lookup(s.index, off))
	var buf [HeaderSize]byte
	for {
		b, bad, err := s.readHeader(&buf, pos)
		if err != nil {
			return 0, err
		}
		if bad == nil && b.BaseOffset() != next {
			bad = fmt.Errorf("%w: base offset %d, want %d", ErrCorrupt, b.BaseOffset(), next)
		}
		if bad != nil {
			return 0, s.corrupt(pos, next, bad)
		}
		if b.NextOffset() > off {
			return next, nil
		}
		pos += int64(b.Size())
		next = b.NextOffset()
	}
}

// The high-watermark checkpoint of a replicated table, <table>/high-watermarks:
//
//	count uint32 | count × high watermark int64 | CRC-32C uint32 of the bytes before it
//
// one per bucket, replaced whole (temporary file, fsync, rename). It lags
// the high watermarks, which is safe: on open a bucket's high watermark is
// the lesser of its checkpoint and its durable end, and the leader brings
// it up to date. A missing or damaged checkpoint is 0 for every bucket.
const hwFileName = "high-watermarks"

func encodeHighWatermarks(hws []int64) []byte {
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(hws)))
	for _, hw := range hws {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(hw))
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

func decodeHighWatermarks(buf []byte, n int) ([]int64, bool) {
	if len(buf) != 4+8*n+4 || binary.LittleEndian.Uint32(buf) != uint32(n) ||
		crc32.Checksum(buf[:len(buf)-4], castagnoli) != binary.LittleEndian.Uint32(buf[len(buf)-4:]) {
		return nil, false
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(buf[4+8*i:]))
	}
	return out, true
}

// CheckpointHighWatermarks writes every bucket's high watermark to the
// checkpoint file, durably, unless it holds them already. For a table that
// is not replicated it does nothing.
func (t *TableLog) CheckpointHighWatermarks() error {
	if !t.opts.Replicated {
		return nil
	}
	t.hmu.Lock()
	defer t.hmu.Unlock()
	hws := t.CommittedEnds()
	if slices.Equal(hws, t.checkpointed) {
		return nil
	}
	name := path.Join(t.dir, hwFileName)
	if err := writeFileSync(t.opts.FS, name+".tmp", encodeHighWatermarks(hws)); err != nil {
		return fmt.Errorf("checkpoint high watermarks: %w", err)
	}
	if err := t.opts.FS.Rename(name+".tmp", name); err != nil {
		return fmt.Errorf("checkpoint high watermarks: %w", err)
	}
	if err := t.opts.FS.SyncDir(t.dir); err != nil {
		return fmt.Errorf("checkpoint high watermarks: sync dir: %w", err)
	}
	t.checkpointed = hws
	return nil
}

// openReplicated loads each bucket's epoch history and high watermark as a
// replicated table opens, once its buckets are recovered.
func (t *TableLog) openReplicated() error {
	for b, l := range t.buckets {
		l.mu.Lock()
		err := l.loadEpochsLocked()
		l.mu.Unlock()
		if err != nil {
			return fmt.Errorf("bucket %d: %w", b, err)
		}
	}
	hws := make([]int64, len(t.buckets))
	buf, err := readFile(t.opts.FS, path.Join(t.dir, hwFileName))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if got, ok := decodeHighWatermarks(buf, len(t.buckets)); ok {
			hws = got
		} else {
			t.opts.Logger.Warn("high-watermark checkpoint damaged: starting from 0", "dir", t.dir)
		}
	}
	ends := make([]int64, len(t.buckets))
	for b, l := range t.buckets {
		l.raiseHighWatermark(hws[b])
		ends[b] = l.Committed()
	}
	t.ends.Store(&ends)
	t.checkpointed = hws
	return nil
}
