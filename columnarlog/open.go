package columnarlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"sort"

	"github.com/lakestream/lakestream/internal/invariants"
)

// Open opens the log in dir, creating it when missing, and recovers it: the
// active segment is scanned and checked batch by batch, a torn or damaged
// tail is cut off (the lost batches were never acknowledged), and its index
// is rebuilt. A damaged sealed segment is a *CorruptionError: it held
// acknowledged data, and is not repaired silently.
func Open(dir string, opts Options) (*Log, error) {
	return open(dir, opts, true)
}

// open opens a log. With cutBadTail false, a damaged tail of the active
// segment is left in the file, out of the log (Stats().Next ends before
// it), for the caller to decide (TableLog.recoverBucket): a bucket of a
// table knows from the commit file whether the tail held acknowledged data,
// and then reports the damage without destroying the batches after it.
func open(dir string, opts Options, cutBadTail bool) (*Log, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if opts.Replicated && cutBadTail {
		return nil, fmt.Errorf("open log %s: a replicated log is a bucket of a TableLog", dir)
	}
	l := &Log{dir: dir, opts: opts, done: make(chan struct{})}
	ch, dch := make(chan struct{}), make(chan struct{})
	l.notify.Store(&ch)
	l.notifyDurable.Store(&dch)
	l.mu.epoch = opts.LeaderEpoch
	// A standalone log shows what is durable. A TableLog's bucket shows
	// nothing until the TableLog has recovered it (recoverBucket) and, in a
	// replicated table, set its high watermark.
	if cutBadTail {
		l.hw.Store(math.MaxInt64)
	}
	if err := l.recover(cutBadTail); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return l, nil
}

func (l *Log) closeSegments() {
	for _, s := range l.mu.segments {
		s.release()
	}
	l.mu.segments = nil
}

func (l *Log) recover(cutBadTail bool) error {
	fs := l.opts.FS
	if _, err := fs.Stat(l.dir); errors.Is(err, os.ErrNotExist) {
		if err := fs.MkdirAll(l.dir, 0o755); err != nil {
			return err
		}
		if err := fs.SyncDir(path.Dir(l.dir)); err != nil {
			return err
		}
	}
	names, err := fs.List(l.dir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	if len(bases) == 0 {
		s, err := l.createSegment(0)
		if err != nil {
			return err
		}
		l.mu.segments = []*segment{s}
		l.mu.writers = map[int64]writerState{}
		l.checkSegmentsLocked() // no other goroutine has the log yet
		return nil
	}
	for i, base := range bases[:len(bases)-1] {
		s, err := l.openSealed(base, bases[i+1])
		if err != nil {
			return err
		}
		l.mu.segments = append(l.mu.segments, s)
	}
	if err := l.recoverActive(bases[len(bases)-1], cutBadTail); err != nil {
		return err
	}
	l.mu.start = bases[0]
	l.checkSegmentsLocked() // no other goroutine has the log yet
	return nil
}

// openSealed opens a sealed segment, loading its index files or rebuilding
// them when they are missing or do not match.
func (l *Log) openSealed(base, nextBase int64) (*segment, error) {
	s := &segment{base: base, dir: l.dir, sealed: true}
	f, err := l.opts.FS.Open(s.path(logSuffix))
	if err != nil {
		return nil, err
	}
	s.f = f
	s.refs.Store(1)
	size, err := f.Size()
	if err != nil {
		s.release()
		return nil, err
	}
	s.size, s.synced = size, size
	res, err := l.loadIndex(s, nextBase)
	if err != nil {
		s.release()
		return nil, err
	}
	if res.bad != nil || res.next != nextBase {
		s.release()
		if res.bad != nil {
			return nil, res.bad
		}
		return nil, s.corrupt(res.end, res.next, fmt.Errorf("%w: the segment ends at offset %d but the next starts at %d",
			ErrCorrupt, res.next, nextBase))
	}
	s.next, s.maxTS = res.next, res.maxTS
	s.firstTS = res.firstTS
	if len(s.index) > 0 {
		s.firstTS = s.index[0].ts
	}
	return s, nil
}

// loadIndex loads the index of sealed segment s from its files, or rebuilds
// it from the segment when they are missing or damaged, and returns what a
// scan of the segment's tail learnt.
func (l *Log) loadIndex(s *segment, nextBase int64) (scanResult, error) {
	interval := l.opts.IndexIntervalBytes
	idx, ierr := readFile(l.opts.FS, s.path(indexSuffix))
	tidx, terr := readFile(l.opts.FS, s.path(timeIndexSuffix))
	why := "missing"
	if err := errors.Join(ierr, terr); err != nil && !errors.Is(err, os.ErrNotExist) {
		why = err.Error()
	}
	if ierr == nil && terr == nil && len(idx) > 0 {
		why = "inconsistent"
		if index, ok := s.decodeIndexes(idx, tidx, s.size); ok {
			// With a good index, only the headers after its last entry are
			// read to learn the segment's end and newest timestamp.
			last := index[len(index)-1]
			res, err := s.scan(last.pos, last.offset, false, interval, s.size)
			if err != nil || res.bad == nil && res.next == nextBase {
				s.index = index
				return res, err
			}
			// An index that does not lead to the segment's end is damaged
			// (index files have no checksum), not necessarily the segment:
			// the full scan decides.
			why = "its last entry does not lead to the end of the segment"
		}
	}
	res, err := s.scan(0, s.base, false, interval, s.size)
	if err != nil || res.bad != nil || res.next != nextBase {
		return res, err // the caller reports a damaged segment
	}
	s.index = res.index
	l.opts.Logger.Info("rebuilt segment index", "segment", s.path(logSuffix), "entries", len(s.index), "index", why)
	if err := l.writeIndexes(s); err != nil {
		// A cache: the next open rebuilds it again.
		l.opts.Logger.Warn("rewrite rebuilt segment index", "segment", s.path(logSuffix), "error", err)
	}
	return res, nil
}

// recoverActive opens the last segment for appending, checks every batch,
// and rebuilds the in-memory state from it. A bad tail is cut off the file
// with cutBadTail; without, it stays in the file, past the end of the log,
// and is remembered in l.mu.badTail for the caller.
func (l *Log) recoverActive(base int64, cutBadTail bool) error {
	a, err := l.openActive(base)
	if err != nil {
		return err
	}
	if a.res.bad != nil && cutBadTail {
		l.opts.Logger.Warn("truncating torn or damaged log tail", "dir", l.dir,
			"error", a.res.bad, "cut_bytes", a.size-a.res.end)
		if err := a.s.f.Truncate(a.res.end); err != nil {
			a.s.release()
			return fmt.Errorf("truncate torn tail: %w", err)
		}
	}
	// Whatever survived the crash is made durable now, so the committed
	// offset published below is true.
	if err := a.s.f.Sync(); err != nil {
		a.s.release()
		return err
	}
	l.installActiveLocked(a) // no other goroutine has the log yet
	if !cutBadTail {
		l.mu.badTail = a.res.bad
	}
	return nil
}

// activeScan is an active segment opened and scanned, not yet part of the log.
type activeScan struct {
	s       *segment
	size    int64 // bytes in the file
	res     scanResult
	writers map[int64]writerState
}

// openActive opens the segment at base for appending, scans it whole,
// checking every batch, and reads the writers' state as of its base. It
// changes nothing of the log, so a caller that finds the result wanting
// releases the segment and leaves the log as it was.
func (l *Log) openActive(base int64) (activeScan, error) {
	s := &segment{base: base, dir: l.dir}
	f, err := l.opts.FS.OpenAppend(s.path(logSuffix))
	if err != nil {
		return activeScan{}, err
	}
	s.f = f
	s.refs.Store(1)
	a := activeScan{s: s}
	if a.size, err = f.Size(); err == nil {
		a.res, err = s.scan(0, base, true, l.opts.IndexIntervalBytes, a.size)
	}
	if err == nil {
		a.writers, err = readWriterSnapshot(l.opts.FS, l.dir, base)
	}
	if err != nil {
		s.release()
		return activeScan{}, err
	}
	for id, st := range a.res.writers {
		a.writers[id] = st
	}
	return a, nil
}

// installActiveLocked makes a scanned segment the log's active (last)
// segment and its end the log's end, committed and synced as far as it goes.
func (l *Log) installActiveLocked(a activeScan) {
	s, res := a.s, a.res
	s.size, s.synced, s.next = res.end, res.end, res.next
	s.firstTS, s.maxTS, s.index = res.firstTS, res.maxTS, res.index
	l.mu.segments = append(l.mu.segments, s)
	l.mu.writers = a.writers
	l.mu.next = res.next
	// The batches a truncation cut may be newer than those left, and a new
	// leader's clock behind the old one's: commit timestamps go on from the
	// batches left.
	l.mu.lastTS = l.lastTimestampLocked()
	// Invariant: committed never moves back. On open it starts at 0;
	// truncate cuts no visible batch (TableLog.Truncate stays at or above
	// the high watermark, a repair and recovery at or above the committed
	// ends).
	if invariants.Enabled && res.next < l.committed.Load() {
		invariants.Failf("committed never moves back", "%s: cut to %d below the committed offset %d", l.dir, res.next, l.committed.Load())
	}
	// Invariant: the durable end is never below the high watermark
	// (math.MaxInt64 in a log that is not replicated).
	if hw := l.hw.Load(); invariants.Enabled && hw != math.MaxInt64 && res.next < hw {
		invariants.Failf("high watermark <= durable end", "%s: cut to %d below the high watermark %d", l.dir, res.next, hw)
	}
	if l.durable.Swap(res.next) != res.next {
		signal(&l.notifyDurable)
	}
	l.committed.Store(min(res.next, l.hw.Load()))
	l.sync.reset(res.next)
}

func (l *Log) lastTimestampLocked() int64 {
	for i := len(l.mu.segments) - 1; i >= 0; i-- {
		if ts := l.mu.segments[i].maxTS; ts != 0 {
			return ts
		}
	}
	return 0
}

// truncate drops every batch at or after offset to, a batch boundary in
// [Start, end of the log], and whatever bytes follow the log's end in its
// active segment (a damaged tail that recovery left, a write that failed
// half way). The segment holding to becomes the active one. A TableLog uses
// it on recovery, to cut its buckets back to their committed ends, and to
// repair itself after a failed write, with readers open: they read only
// below the committed offset, which is at most to, and truncation moves
// none of those bytes.
//
// It may be retried after an error: the log's state changes only once the
// files are as it says, and a batch below to that fails its check is
// reported as a *CorruptionError, with nothing of the segment cut below to.
func (l *Log) truncate(to int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.truncateLocked(to)
}

func (l *Log) truncateLocked(to int64) error {
	if to < l.mu.start || to > l.mu.next {
		return fmt.Errorf("truncate to %d: the log holds [%d, %d): %w", to, l.mu.start, l.mu.next, ErrOffsetOutOfRange)
	}
	// Segments wholly above to go, newest first. A segment starting at to
	// stays, emptied: a reader waiting at to may hold it.
	for segs := l.mu.segments; segs[len(segs)-1].base > to; segs = l.mu.segments {
		s := segs[len(segs)-1]
		if err := l.deleteSegmentFiles(s); err != nil {
			return fmt.Errorf("truncate to %d: %w", to, err)
		}
		l.mu.segments = segs[:len(segs)-1]
		s.removed = true
		if err := s.release(); err != nil {
			return fmt.Errorf("truncate to %d: %w", to, err)
		}
	}
	if err := l.removeStraySegments(to); err != nil {
		return fmt.Errorf("truncate to %d: %w", to, err)
	}
	s := l.mu.segments[len(l.mu.segments)-1]
	pos, err := l.positionOf(s, to)
	if err != nil {
		return fmt.Errorf("truncate to %d: %w", to, err)
	}
	if err := l.cutFile(s, pos); err != nil {
		return fmt.Errorf("truncate to %d: %w", to, err)
	}
	// A segment that was sealed had only its headers read on open; active
	// again, it is checked batch by batch, and damage below to is reported.
	a, err := l.openActive(s.base)
	if err != nil {
		return fmt.Errorf("truncate to %d: %w", to, err)
	}
	if a.res.bad != nil || a.res.next != to {
		a.s.release()
		if a.res.bad != nil {
			return fmt.Errorf("truncate to %d: %w", to, a.res.bad)
		}
		return fmt.Errorf("truncate to %d: %w", to, s.corrupt(a.res.end, a.res.next,
			fmt.Errorf("%w: the segment ends at offset %d", ErrCorrupt, a.res.next)))
	}
	// Readers holding the old segment keep its file open; it is the same
	// file.
	l.mu.segments = l.mu.segments[:len(l.mu.segments)-1]
	s.release()
	l.installActiveLocked(a)
	// The files are now what the log says, up to to: a write error that
	// left them otherwise is repaired.
	l.mu.badTail, l.mu.err = nil, nil
	l.checkSegmentsLocked()
	// Epochs that started above to had no batch left.
	if err := l.cutEpochsLocked(to, false); err != nil {
		return fmt.Errorf("truncate to %d: %w", to, err)
	}
	return nil
}

// removeStraySegments deletes the segment files at or above offset to that
// are not segments of the log: one a failed roll created and could not
// remove. Recovery would take it for the active segment, after a sealed one
// that does not end where it starts.
func (l *Log) removeStraySegments(to int64) error {
	names, err := l.opts.FS.List(l.dir)
	if err != nil {
		return err
	}
	ours := map[int64]bool{}
	for _, s := range l.mu.segments {
		ours[s.base] = true
	}
	for _, n := range names {
		base, ok := parseSegmentName(n)
		if !ok || base < to || ours[base] {
			continue
		}
		stray := &segment{base: base, dir: l.dir}
		if err := l.deleteSegmentFiles(stray); err != nil {
			return err
		}
	}
	return nil
}

// cutFile truncates the file of segment s at pos and syncs it.
func (l *Log) cutFile(s *segment, pos int64) error {
	f, err := l.opts.FS.OpenAppend(s.path(logSuffix))
	if err != nil {
		return err
	}
	if err := errors.Join(f.Truncate(pos), f.Sync()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// positionOf returns the file position of the batch starting at offset,
// reading headers from the nearest index entry. A bad header on the way is
// a *CorruptionError.
func (l *Log) positionOf(s *segment, offset int64) (int64, error) {
	pos, next, err := l.walkTo(s, offset)
	if err == nil && next != offset {
		err = s.corrupt(pos, next, fmt.Errorf("%w: offset %d is not a batch boundary", ErrCorrupt, offset))
	}
	return pos, err
}

// walkTo reads the headers of segment s from the nearest index entry
// before offset up to the first batch that does not start below it, and
// returns its position and offset: offset itself if offset is a batch
// boundary.
func (l *Log) walkTo(s *segment, offset int64) (pos, next int64, err error) {
	pos, next = l.seek(s, lookup(s.index, offset))
	var buf [HeaderSize]byte
	for next < offset {
		b, bad, err := s.readHeader(&buf, pos)
		if err != nil {
			return 0, 0, err
		}
		if bad == nil && b.BaseOffset() != next {
			bad = fmt.Errorf("%w: base offset %d, want %d", ErrCorrupt, b.BaseOffset(), next)
		}
		if bad != nil {
			return 0, 0, s.corrupt(pos, next, bad)
		}
		pos += int64(b.Size())
		next = b.NextOffset()
	}
	return pos, next, nil
}

// removeSegmentLocked deletes a segment's files; open readers keep the log
// file until they release it.
func (l *Log) removeSegmentLocked(s *segment) error {
	s.removed = true
	return errors.Join(l.deleteSegmentFiles(s), s.release())
}

// deleteSegmentFiles deletes the files of segment s, those already gone
// aside, and syncs the directory.
func (l *Log) deleteSegmentFiles(s *segment) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, writersSuffix} {
		if err := l.opts.FS.Remove(s.path(suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
