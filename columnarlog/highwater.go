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

// High watermarks of a replicated table (replica.go): per bucket, the offset
// below which readers see rows, moved up by the caller as the in-sync
// replicas acknowledge batches, and checkpointed now and then.

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
	if err := replaceFile(t.opts.FS, t.dir, hwFileName, encodeHighWatermarks(hws)); err != nil {
		return fmt.Errorf("checkpoint high watermarks: %w", err)
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
		// A bucket that starts above its checkpoint (RestartAt) has
		// nothing below its start for readers to wait for.
		l.raiseHighWatermark(max(hws[b], l.Start()))
		ends[b] = l.Committed()
	}
	t.ends.Store(&ends)
	t.checkpointed = hws
	return nil
}
