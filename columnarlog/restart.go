package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path"
	"slices"

	"github.com/lakestream/lakestream/internal/vfs"
)

// A follower that was away while its leader deleted segments past the
// follower's end (retention, once they were tiered) cannot fetch what it
// lacks: the leader's log starts above it. RestartAt empties the follower's
// bucket and starts it again at the leader's start, as Kafka's followers do
// on OffsetOutOfRange; the rows below are in the lake, or, without one,
// gone on the leader too.
//
// The restart is made crash-safe by a marker, <bucket>/restart:
//
//	start offset int64 | CRC-32C uint32 of the bytes before it
//
// written (temporary file, fsync, rename) before any segment is deleted,
// and removed once the commit file names the new start. A table that opens
// with a marker in a bucket finishes the restart before it recovers the
// bucket.
const restartFileName = "restart"

// RestartAt empties bucket b of a replicated table and starts it again at
// offset start, at or above the bucket's end: every segment goes, the epoch
// history and the idempotent writers' states are cleared (the batches
// fetched next bring their epochs), and the durable end and the high
// watermark move up to start, so readers see the bucket's committed end at
// start (rows below it are read from the lake, as below any log's start).
// The next AppendReplica must start at start. Durable on return; it waits
// for the writes in flight to commit first.
func (t *TableLog) RestartAt(b int, start int64) error {
	if !t.opts.Replicated {
		return fmt.Errorf("restart bucket %d at %d: the table is not replicated", b, start)
	}
	if b < 0 || b >= len(t.buckets) {
		return fmt.Errorf("restart bucket %d: the table has %d buckets", b, len(t.buckets))
	}
	if err := t.settle(); err != nil {
		return fmt.Errorf("restart bucket %d at %d: %w", b, start, err)
	}
	defer t.wmu.Unlock()
	t.hmu.Lock()
	defer t.hmu.Unlock()
	l := t.buckets[b]
	ends := slices.Clone(t.DurableEnds())
	if start < ends[b] {
		return fmt.Errorf("restart bucket %d at %d: below its end %d (Truncate cuts a log back): %w", b, start, ends[b], ErrOffsetOutOfRange)
	}
	if err := replaceFile(t.opts.FS, l.dir, restartFileName, encodeRestartMarker(start)); err != nil {
		return fmt.Errorf("restart bucket %d at %d: %w", b, start, err)
	}
	// From here a failure leaves the marker: the log refuses writes (t.err)
	// and the next open finishes the restart.
	fail := func(err error) error {
		t.err = fmt.Errorf("restart bucket %d at %d: %w", b, start, err)
		return t.err
	}
	if err := l.restart(start); err != nil {
		return fail(err)
	}
	ends[b] = start
	if err := t.rewriteCommitFile(t.seq, ends); err != nil {
		return fail(err)
	}
	t.written[b] = start
	t.durable.Store(&ends)
	visible := slices.Clone(t.CommittedEnds())
	visible[b] = l.Committed()
	t.ends.Store(&visible)
	if err := removeRestartMarker(t.opts.FS, l.dir); err != nil {
		return fail(err)
	}
	return nil
}

// restart deletes every segment of the log and starts it again, empty, at
// offset start, above its end: see TableLog.RestartAt. It may be retried
// after an error, and runs again on open when the marker is left.
func (l *Log) restart(start int64) error {
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	// Newest first, so that a crash on the way leaves a log that tiles.
	for segs := l.mu.segments; len(segs) > 0; segs = l.mu.segments {
		s := segs[len(segs)-1]
		if err := l.deleteSegmentFiles(s); err != nil {
			return err
		}
		l.mu.segments = segs[:len(segs)-1]
		s.removed = true
		if err := s.release(); err != nil {
			return err
		}
	}
	if err := l.removeStraySegments(0); err != nil {
		return err
	}
	s, err := l.createSegment(start)
	if err != nil {
		return err
	}
	l.mu.segments = []*segment{s}
	l.mu.start, l.mu.next, l.mu.lastTS = start, start, 0
	l.mu.writers = map[int64]writerState{}
	l.mu.badTail, l.mu.err = nil, nil
	l.mu.epochs = nil
	if err := writeEpochs(l.opts.FS, l.dir, l.mu.epoch, nil); err != nil {
		return err
	}
	l.checkSegmentsLocked()
	// Everything below start is gone from the log: the high watermark,
	// the durable end and committed move up to it, never back.
	raise(&l.hw, start)
	if raise(&l.durable, start) {
		signal(&l.notifyDurable)
	}
	l.refreshCommitted()
	l.sync.reset(start)
	return nil
}

func encodeRestartMarker(start int64) []byte {
	buf := binary.LittleEndian.AppendUint64(nil, uint64(start))
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// readRestartMarker returns the start a bucket's restart marker names, and
// whether there is one. A damaged marker wraps ErrCorrupt (it is renamed
// into place whole, so only damage makes it so).
func readRestartMarker(fs vfs.FS, dir string) (int64, bool, error) {
	buf, err := readFile(fs, path.Join(dir, restartFileName))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	if len(buf) != 12 || crc32.Checksum(buf[:8], castagnoli) != binary.LittleEndian.Uint32(buf[8:]) {
		return 0, false, fmt.Errorf("restart marker in %s: %w: checksum or length mismatch", dir, ErrCorrupt)
	}
	start := int64(binary.LittleEndian.Uint64(buf))
	if start < 0 {
		return 0, false, fmt.Errorf("restart marker in %s: %w: start %d", dir, ErrCorrupt, start)
	}
	return start, true, nil
}

// removeRestartMarker deletes a bucket's restart marker, durably.
func removeRestartMarker(fs vfs.FS, dir string) error {
	if err := fs.Remove(path.Join(dir, restartFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove restart marker: %w", err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("remove restart marker: sync dir: %w", err)
	}
	return nil
}
