package columnarlog

import (
	"errors"
	"fmt"
	"io"
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
}

// NewReader returns a reader whose first batch holds offset from. from must
// lie in [Start, Committed]; at Committed the reader waits for new batches.
func (l *Log) NewReader(from int64) (*Reader, error) {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil && errors.Is(err, ErrClosed) {
		l.mu.Unlock()
		return nil, err
	}
	if from < l.mu.start || from > l.committed.Load() {
		l.mu.Unlock()
		return nil, fmt.Errorf("read from offset %d: log holds [%d, %d): %w",
			from, l.mu.start, l.committed.Load(), ErrOffsetOutOfRange)
	}
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > from }) - 1
	s := segs[max(i, 0)]
	s.acquire()
	e := lookup(s.index, from)
	l.mu.Unlock()
	// The segment is acquired: seek reads it without the log's lock.
	r := &Reader{l: l, seg: s, from: from, chunk: 1 << 20}
	r.pos, r.next = l.seek(s, e)
	return r, nil
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
func (r *Reader) Next(dst []byte, maxBytes int) ([]Batch, []byte, error) {
	var out []Batch
	start := len(dst)
	for len(dst)-start < maxBytes {
		committed := r.l.Committed()
		if r.next >= committed {
			break
		}
		n, buf, err := r.readChunk(dst, committed)
		if err != nil {
			return nil, dst, err
		}
		if n == 0 {
			if !r.advanceSegment() {
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
// them to dst, and moves the position past them. It returns how many bytes it
// added; 0 means the segment has no more batches.
func (r *Reader) readChunk(dst []byte, committed int64) (int, []byte, error) {
	want := max(r.chunk, HeaderSize)
	for {
		off := len(dst)
		dst = grow(dst, want)
		n, err := r.seg.f.ReadAt(dst[off:off+want], r.pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, dst[:off], fmt.Errorf("read segment %s at %d: %w", segmentName(r.seg.base, logSuffix), r.pos, err)
		}
		got := dst[off : off+n]
		used, next, needed := wholeBatches(got, r.next, committed)
		if used == 0 && needed > want {
			// A batch larger than the chunk: read it whole, and read
			// chunks that large from now on, since batches of a log
			// tend to be alike.
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

// wholeBatches counts the bytes of the complete batches at the start of buf
// that begin below committed. needed is the size of a first batch that did
// not fit.
func wholeBatches(buf []byte, next, committed int64) (used int, nextOffset int64, needed int) {
	nextOffset = next
	for len(buf)-used >= HeaderSize {
		b := Batch(buf[used:])
		if b.BaseOffset() >= committed || b.BaseOffset() != nextOffset {
			break
		}
		size := b.Size()
		if size > len(buf)-used {
			if used == 0 {
				needed = size
			}
			break
		}
		used += size
		nextOffset = b.NextOffset()
	}
	return used, nextOffset, needed
}

// advanceSegment moves to the next segment once the current one is sealed
// and read to its end.
func (r *Reader) advanceSegment() bool {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	segs := r.l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > r.seg.base })
	if i == len(segs) || segs[i].base != r.next {
		return false
	}
	s := segs[i]
	s.acquire()
	r.seg.release()
	r.seg, r.pos = s, 0
	return true
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
// committed offset when there is none yet.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	l.mu.Lock()
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].maxTS >= ts })
	if i == len(segs) {
		l.mu.Unlock()
		return l.committed.Load(), nil
	}
	s := segs[i]
	s.acquire()
	e := lookupTime(s.index, ts)
	l.mu.Unlock()
	defer s.release()

	pos, next := l.seek(s, e)
	committed := l.committed.Load()
	var hdr [HeaderSize]byte
	for next < committed {
		if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
		b := Batch(hdr[:])
		if b.CommitTimestamp() >= ts {
			return b.BaseOffset(), nil
		}
		pos += int64(b.Size())
		next = b.NextOffset()
	}
	return committed, nil
}
