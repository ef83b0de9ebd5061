package columnarlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
)

// Open opens the log in dir, creating it when missing, and recovers it: the
// active segment is scanned and checked batch by batch, a torn or damaged
// tail is cut off (the lost batches were never acknowledged), and its index
// is rebuilt. A damaged sealed segment is an error wrapping ErrCorrupt: it held
// acknowledged data, and is not repaired silently.
func Open(dir string, opts Options) (*Log, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	l := &Log{dir: dir, opts: opts, done: make(chan struct{})}
	ch := make(chan struct{})
	l.notify.Store(&ch)
	if err := l.recover(); err != nil {
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

func (l *Log) recover() error {
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
	if err := l.recoverActive(bases[len(bases)-1]); err != nil {
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
		return nil, fmt.Errorf("segment %s ends at offset %d but the next starts at %d: %w",
			segmentName(base, logSuffix), res.next, nextBase, ErrCorrupt)
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
// cuts a bad tail and rebuilds the in-memory state from it.
func (l *Log) recoverActive(base int64) error {
	s := &segment{base: base, dir: l.dir}
	f, err := l.opts.FS.OpenAppend(s.path(logSuffix))
	if err != nil {
		return err
	}
	s.f = f
	s.refs.Store(1)
	size, err := f.Size()
	if err != nil {
		s.release()
		return err
	}
	res, err := s.scan(0, base, true, l.opts.IndexIntervalBytes, size)
	if err != nil {
		s.release()
		return err
	}
	if res.bad != nil {
		l.opts.Logger.Warn("truncating torn or damaged log tail", "dir", l.dir,
			"error", res.bad, "cut_bytes", size-res.end)
		if err := f.Truncate(res.end); err != nil {
			s.release()
			return fmt.Errorf("truncate torn tail: %w", err)
		}
	}
	// Whatever survived the crash is made durable now, so the committed
	// offset published below is true.
	if err := f.Sync(); err != nil {
		s.release()
		return err
	}
	writers, err := readWriterSnapshot(l.opts.FS, l.dir, base)
	if err != nil {
		s.release()
		return err
	}
	for id, st := range res.writers {
		writers[id] = st
	}
	s.size, s.synced, s.next = res.end, res.end, res.next
	s.firstTS, s.maxTS, s.index = res.firstTS, res.maxTS, res.index
	l.mu.segments = append(l.mu.segments, s)
	l.mu.writers = writers
	l.mu.next = res.next
	l.mu.lastTS = l.lastTimestampLocked()
	l.committed.Store(res.next)
	l.sync.reset(res.next)
	return nil
}

func (l *Log) lastTimestampLocked() int64 {
	for i := len(l.mu.segments) - 1; i >= 0; i-- {
		if ts := l.mu.segments[i].maxTS; ts != 0 {
			return ts
		}
	}
	return 0
}

// truncate drops every batch at or after offset to, which must be a batch
// boundary. It is for recovery (a TableLog cutting uncommitted batches) and
// runs before any reader exists.
func (l *Log) truncate(to int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if to >= l.mu.next {
		return nil
	}
	if to < l.mu.start {
		return fmt.Errorf("truncate to %d: below log start %d: %w", to, l.mu.start, ErrOffsetOutOfRange)
	}
	// Drop whole segments above to; the one holding to becomes active.
	for len(l.mu.segments) > 1 && l.mu.segments[len(l.mu.segments)-1].base >= to {
		s := l.mu.segments[len(l.mu.segments)-1]
		l.mu.segments = l.mu.segments[:len(l.mu.segments)-1]
		if err := l.removeSegmentLocked(s); err != nil {
			return err
		}
	}
	s := l.mu.segments[len(l.mu.segments)-1]
	pos, err := l.positionOf(s, to)
	if err != nil {
		return err
	}
	l.mu.segments = l.mu.segments[:len(l.mu.segments)-1]
	s.release()
	f, err := l.opts.FS.OpenAppend(s.path(logSuffix))
	if err != nil {
		return err
	}
	if err := f.Truncate(pos); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := l.recoverActive(s.base); err != nil {
		return err
	}
	// A segment that was sealed had only its headers read on open; active
	// again, it was checked batch by batch, and damage below to cut it short.
	// The rows it lost were committed.
	if l.mu.next != to {
		return fmt.Errorf("truncate to %d: segment %s ends at offset %d: %w", to, segmentName(s.base, logSuffix), l.mu.next, ErrCorrupt)
	}
	l.checkSegmentsLocked()
	return nil
}

// positionOf returns the file position of the batch starting at offset.
func (l *Log) positionOf(s *segment, offset int64) (int64, error) {
	pos, next := l.seek(s, lookup(s.index, offset))
	var hdr [HeaderSize]byte
	for next < offset {
		if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
		b := Batch(hdr[:])
		pos += int64(b.Size())
		next = b.NextOffset()
	}
	if next != offset {
		return 0, fmt.Errorf("offset %d is not a batch boundary in segment %s: %w", offset, segmentName(s.base, logSuffix), ErrCorrupt)
	}
	return pos, nil
}

// removeSegmentLocked deletes a segment's files; open readers keep the log
// file until they release it.
func (l *Log) removeSegmentLocked(s *segment) error {
	s.removed = true
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, writersSuffix} {
		if err := l.opts.FS.Remove(s.path(suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	if err := s.release(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
