package columnarlog

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/lakestream/lakestream/internal/invariants"
)

// Reader reads committed batches of a log in offset order, from a starting
// offset. The batches it returns are the stored bytes, header included: they
// are forwarded, not decoded. A Reader is not safe for concurrent use.
type Reader struct {
	l    *Log
	seg  *segment // acquired
	pos  int64    // file position of the next batch in seg
	next int64    // offset of the next batch to read (its base)
	// from is the offset the reader was opened at. The sparse index puts
	// the first read up to an index interval before it; Next drops the
	// batches wholly below it.
	from int64
	// chunk is the read size: one ReadAt usually brings several batches.
	chunk int
	// replica reads up to the durable end rather than the committed one.
	replica bool
	// gen is the number of the log's cuts (Truncate) the reader has seen;
	// err, once a cut passed the reader, what Next returns.
	gen int64
	err error
}

// NewReader returns a reader whose first batch holds offset from. from must
// lie in [Start, Committed]; at Committed the reader waits for new batches.
func (l *Log) NewReader(from int64) (*Reader, error) { return l.newReader(from, false) }

// NewReplicaReader returns a reader of the batches up to the durable end
// (Durable), above the high watermark too: what a follower fetches. from
// must lie in [Start, Durable]. A Truncate that cuts the log below the
// reader's next offset ends it with ErrTruncated.
func (l *Log) NewReplicaReader(from int64) (*Reader, error) { return l.newReader(from, true) }

func (l *Log) newReader(from int64, replica bool) (*Reader, error) {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil && errors.Is(err, ErrClosed) {
		l.mu.Unlock()
		return nil, err
	}
	end := l.committed.Load()
	if replica {
		end = l.durable.Load()
	}
	if from < l.mu.start || from > end {
		l.mu.Unlock()
		return nil, fmt.Errorf("read from offset %d: log holds [%d, %d): %w",
			from, l.mu.start, end, ErrOffsetOutOfRange)
	}
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > from }) - 1
	s := segs[max(i, 0)]
	s.acquire()
	e := lookup(s.index, from)
	gen := int64(len(l.mu.cuts))
	l.mu.Unlock()
	// The segment is acquired: seek reads it without the log's lock.
	r := &Reader{l: l, seg: s, from: from, chunk: 1 << 20, replica: replica, gen: gen}
	r.pos, r.next = l.seek(s, e)
	return r, nil
}

// limit is the offset the reader reads up to.
func (r *Reader) limit() int64 {
	if r.replica {
		return r.l.Durable()
	}
	return r.l.Committed()
}

// checkCuts looks at the cuts made since the reader last looked: a cut
// below its next offset ends it with ErrTruncated. A cut at or above it
// leaves its position valid: the batches before a cut are not moved, and
// the segment it reads is the same file.
func (r *Reader) checkCuts() error {
	if r.err != nil || r.l.cutGen.Load() == r.gen {
		return r.err
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	cuts := r.l.mu.cuts[r.gen:]
	r.gen = int64(len(r.l.mu.cuts))
	if low := slices.Min(cuts); r.next > low {
		r.err = fmt.Errorf("read at offset %d: the log was truncated to %d: %w", r.next, low, ErrTruncated)
	}
	return r.err
}

// Close releases the reader's segment.
func (r *Reader) Close() error {
	if r.seg == nil {
		return nil
	}
	err := r.seg.release()
	r.seg = nil
	return err
}

// Next appends the committed batches from the reader's position to dst,
// reading chunks until it holds maxBytes or more (at least one batch when
// one is committed), and returns them as slices of the returned buffer. It
// returns no batch when the reader has caught up with the committed offset.
// The first batch is the one holding the offset the reader was opened at,
// which it may begin before.
//
// Every batch is checked as it is read (Batch.Check: header, CRC, sections)
// and must start where the one before it ended, end at or below the
// committed offset, and be followed by the next segment where its segment
// ends. A batch that is not so is a *CorruptionError, returned once the
// batches before it have been: a reader never returns a batch it has not
// checked, nor stops short of the committed offset without an error. A
// reader left behind by retention, its next offset deleted, returns
// ErrOffsetOutOfRange. A replica reader reads up to the durable offset
// instead of the committed one; one whose next offset Truncate cut returns
// ErrTruncated, then and after.
func (r *Reader) Next(dst []byte, maxBytes int) ([]Batch, []byte, error) {
	// No cut while the reader reads: a batch it reads is not cut under it.
	r.l.cutMu.RLock()
	defer r.l.cutMu.RUnlock()
	if err := r.checkCuts(); err != nil {
		return nil, dst, err
	}
	var out []Batch
	start := len(dst)
	for len(dst)-start < maxBytes {
		committed := r.limit()
		if r.next >= committed {
			break
		}
		n, buf, err := r.readChunk(dst, committed)
		if err != nil {
			if len(out) > 0 {
				break // the batches before the damage first; the next call reports it
			}
			return nil, dst, err
		}
		if n == 0 {
			ok, err := r.advanceSegment(committed)
			if err != nil {
				if len(out) > 0 {
					break
				}
				return nil, dst, err
			}
			if !ok {
				break
			}
			continue
		}
		var kept []Batch
		kept, dst = r.dropBelowFrom(buf, len(dst))
		out = append(out, kept...)
	}
	// Invariant: a reader never returns a batch wholly below the offset it
	// was opened at.
	if invariants.Enabled && len(out) > 0 && out[0].NextOffset() <= r.from {
		invariants.Failf("reader starts at the batch holding its offset",
			"opened at %d, first batch [%d,%d)", r.from, out[0].BaseOffset(), out[0].NextOffset())
	}
	// Slices were taken from buffers that append may have moved: retake them.
	return rebase(out, dst, start), dst, nil
}

// dropBelowFrom splits buf[pos:], whole batches back to back, into batches,
// and moves those wholly below the reader's starting offset out: the batches
// kept stay back to back from pos. It returns them and buf cut after them.
func (r *Reader) dropBelowFrom(buf []byte, pos int) ([]Batch, []byte) {
	var out []Batch
	keep := pos
	for pos < len(buf) {
		b := Batch(buf[pos:])
		b = b[:b.Size()]
		pos += len(b)
		if b.NextOffset() <= r.from {
			continue
		}
		if keep != pos-len(b) {
			copy(buf[keep:], b)
		}
		out = append(out, Batch(buf[keep:keep+len(b)]))
		keep += len(b)
	}
	return out, buf[:keep]
}

// readChunk reads whole committed batches at the reader's position, appending
// them to dst, checks them and moves the position past them. It returns how
// many bytes it added; 0 means the segment has no more batches. It returns
// the good batches before a bad one, and the error once the bad one is the
// first.
func (r *Reader) readChunk(dst []byte, committed int64) (int, []byte, error) {
	want := max(r.chunk, HeaderSize)
	for {
		off := len(dst)
		dst = grow(dst, want)
		n, err := r.seg.f.ReadAt(dst[off:off+want], r.pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, dst[:off], fmt.Errorf("read segment %s at %d: %w", r.seg.path(logSuffix), r.pos, err)
		}
		got := dst[off : off+n]
		used, next, needed, bad := r.checkBatches(got, committed, n < want)
		if used == 0 && bad != nil {
			return 0, dst[:off], bad
		}
		if used == 0 && needed > 0 {
			// A batch larger than the chunk: read it whole, and read
			// chunks that large from now on, since batches of a log
			// tend to be alike. Its length is checked against the file
			// first: a version 1 header's length has no checksum.
			if size, err := r.seg.f.Size(); err != nil || r.pos+int64(needed) > size {
				if err != nil {
					return 0, dst[:off], err
				}
				return 0, dst[:off], r.seg.corrupt(r.pos, r.next,
					fmt.Errorf("%w: batch of %d bytes overruns the file (%d bytes)", ErrCorrupt, needed, size))
			}
			want = needed
			r.chunk = max(r.chunk, needed)
			dst = dst[:off]
			continue
		}
		r.pos += int64(used)
		r.next = next
		return used, dst[:off+used], nil
	}
}

// checkBatches checks the complete batches at the start of buf, read at the
// reader's position, that begin below committed, and returns the bytes they
// take and the offset after them. eof says that buf ends where the file
// does. needed is the size of a first batch that did not fit; bad, the
// *CorruptionError of the first batch that is not valid where it is.
func (r *Reader) checkBatches(buf []byte, committed int64, eof bool) (used int, next int64, needed int, bad error) {
	next = r.next
	for next < committed {
		rest := Batch(buf[used:])
		if len(rest) == 0 && eof {
			break // the segment ends here: advanceSegment decides
		}
		if len(rest) < HeaderSize && !eof {
			break // the next read brings the rest of the header
		}
		err := checkHeader(rest)
		switch {
		case err != nil:
		case rest.BaseOffset() != next:
			err = fmt.Errorf("%w: base offset %d, want %d", ErrCorrupt, rest.BaseOffset(), next)
		case rest.NextOffset() > committed:
			err = fmt.Errorf("%w: batch [%d, %d) crosses the committed offset %d", ErrCorrupt, next, rest.NextOffset(), committed)
		case rest.Size() > len(rest) && eof:
			err = fmt.Errorf("%w: batch of %d bytes overruns the file", ErrCorrupt, rest.Size())
		case rest.Size() > len(rest):
			if used == 0 {
				needed = rest.Size()
			}
			return used, next, needed, nil
		default:
			err = rest[:rest.Size()].Check()
		}
		if err != nil {
			return used, next, 0, r.seg.corrupt(r.pos+int64(used), next, err)
		}
		used += rest.Size()
		next = rest.NextOffset()
	}
	return used, next, 0, nil
}

// advanceSegment moves to the next segment once the current one is read to
// its end: the segment that starts at the reader's next offset. When there
// is none, the reader has caught up if its next offset is not committed;
// else the segment is missing committed batches (a *CorruptionError), or
// retention deleted the ones that follow (ErrOffsetOutOfRange), or the log
// was closed (ErrClosed).
func (r *Reader) advanceSegment(committed int64) (bool, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.l.mu.closed {
		return false, ErrClosed
	}
	if r.next < r.l.mu.start {
		return false, fmt.Errorf("read at offset %d: the log now starts at %d: %w", r.next, r.l.mu.start, ErrOffsetOutOfRange)
	}
	segs := r.l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > r.seg.base })
	if i < len(segs) && segs[i].base == r.next {
		s := segs[i]
		s.acquire()
		r.seg.release()
		r.seg, r.pos = s, 0
		return true, nil
	}
	if r.next < committed {
		return false, r.seg.corrupt(r.pos, r.next,
			fmt.Errorf("%w: the segment ends at offset %d, below the committed offset %d, and no segment starts there", ErrCorrupt, r.next, committed))
	}
	return false, nil
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// rebase re-slices batches into buf, whose prefix from start holds them
// back to back.
func rebase(batches []Batch, buf []byte, start int) []Batch {
	pos := start
	for i, b := range batches {
		batches[i] = Batch(buf[pos : pos+len(b)])
		pos += len(b)
	}
	return batches
}

// OffsetForTime returns the first offset of the first committed batch
// whose commit timestamp (unix microseconds) is at or after ts, or the
// committed offset when there is none yet. The headers it reads are checked
// as a reader checks them (a *CorruptionError when they are bad).
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	l.mu.Lock()
	segs := l.mu.segments
	// An empty segment (the active one, after a roll or a cut) will hold
	// only batches newer than every one before it.
	i := sort.Search(len(segs), func(i int) bool { return segs[i].maxTS >= ts || segs[i].next == segs[i].base })
	if i == len(segs) {
		l.mu.Unlock()
		return l.committed.Load(), nil
	}
	s := segs[i]
	s.acquire()
	e := lookupTime(s.index, ts)
	// Below the end of a sealed segment, or the committed offset: a sealed
	// segment whose batches are all older than ts (its maxTS said
	// otherwise) is followed by one that starts at its end.
	limit := l.committed.Load()
	if s.sealed {
		limit = min(limit, s.next)
	}
	l.mu.Unlock()
	defer s.release()

	pos, next := l.seek(s, e)
	var buf [HeaderSize]byte
	for next < limit {
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
		if b.CommitTimestamp() >= ts {
			return b.BaseOffset(), nil
		}
		pos += int64(b.Size())
		next = b.NextOffset()
	}
	return limit, nil
}
