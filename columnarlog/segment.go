package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/lakestream/lakestream/internal/invariants"
	"github.com/lakestream/lakestream/internal/vfs"
)

// A segment is one file of a bucket's log, <base offset, 20 digits>.log, with
// its sparse offset index (.index) and time index (.timeindex).
//
// .index     entries of 8 bytes:  relative offset uint32 | file position uint32
// .timeindex entries of 12 bytes: commit timestamp int64 | relative offset uint32
//
// An index entry is added for the first batch at or after every
// IndexIntervalBytes of log data; the time index has an entry for each offset
// index entry, holding that batch's commit timestamp. Commit timestamps never
// decrease within a log, so both are sorted. Index files are written when a
// segment is sealed, and rebuilt from the log file (and written again) when
// missing or inconsistent; the active segment's index is always rebuilt on
// open, by the recovery scan. They carry no checksum, so an entry is checked
// against the batch it points at before it is used (seek).
type segment struct {
	base int64
	dir  string
	f    vfs.File
	refs atomic.Int32 // the log holds one; readers hold one each

	// Guarded by the log's mutex.
	size    int64 // bytes written
	next    int64 // offset after the last batch
	firstTS int64 // commit timestamp of the first batch, 0 when empty
	maxTS   int64 // commit timestamp of the last batch
	index   []indexEntry
	synced  int64 // bytes known durable
	sealed  bool
	removed bool
}

type indexEntry struct {
	offset int64 // absolute offset of the batch's first row
	pos    int64 // position of the batch in the file
	ts     int64 // commit timestamp of that batch
}

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	indexEntrySize  = 8
	timeEntrySize   = 12
)

func segmentName(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }

// parseSegmentName returns the base offset of a .log file name.
func parseSegmentName(name string) (int64, bool) {
	if !strings.HasSuffix(name, logSuffix) || len(name) != 20+len(logSuffix) {
		return 0, false
	}
	base, err := strconv.ParseInt(strings.TrimSuffix(name, logSuffix), 10, 64)
	return base, err == nil && base >= 0
}

func (s *segment) path(suffix string) string { return path.Join(s.dir, segmentName(s.base, suffix)) }

func (s *segment) acquire() { s.refs.Add(1) }

// release drops a reference; the last one closes the file.
func (s *segment) release() error {
	if s.refs.Add(-1) == 0 {
		return s.f.Close()
	}
	return nil
}

// maybeIndexLocked records an index entry for a batch written at pos when the
// interval since the previous entry is reached.
func (s *segment) maybeIndexLocked(b Batch, pos int64, interval int64) {
	n := len(s.index)
	if n > 0 && pos-s.index[n-1].pos < interval {
		return
	}
	e := indexEntry{offset: b.BaseOffset(), pos: pos, ts: b.CommitTimestamp()}
	// Invariant: index entries are sorted by offset, position and commit
	// timestamp, so that lookup and lookupTime can search them. (Entries
	// rebuilt from disk are checked as data instead: commit timestamps are
	// not covered by the CRC.)
	if invariants.Enabled && n > 0 {
		if last := s.index[n-1]; e.offset <= last.offset || e.pos <= last.pos || e.ts < last.ts {
			invariants.Failf("index entries sorted", "segment %s: entry %+v after %+v", s.path(logSuffix), e, last)
		}
	}
	s.index = append(s.index, e)
}

// lookup returns the index entry at or before offset (the first entry when
// offset is below it).
func lookup(index []indexEntry, offset int64) indexEntry {
	i := sort.Search(len(index), func(i int) bool { return index[i].offset > offset })
	if i == 0 {
		return indexEntry{pos: 0}
	}
	return index[i-1]
}

// lookupTime returns the last index entry whose timestamp is before ts.
func lookupTime(index []indexEntry, ts int64) indexEntry {
	i := sort.Search(len(index), func(i int) bool { return index[i].ts >= ts })
	if i == 0 {
		return indexEntry{pos: 0}
	}
	return index[i-1]
}

// seek returns where to start reading segment s for the index entry e that
// lookup or lookupTime found: the entry's position and offset, or the start
// of the segment. Index files carry no checksum, so a damaged one can pass
// for whole when it is loaded; an entry is trusted only if the batch header
// at its position is a valid header (checkHeader) of the batch it names
// (offset and commit timestamp). One header read buys that: a damaged entry
// would otherwise send a reader into the middle of a batch. A reader that
// falls back meets a damaged batch there itself, and reports it.
func (l *Log) seek(s *segment, e indexEntry) (pos, next int64) {
	if e.pos == 0 {
		return 0, s.base
	}
	var buf [HeaderSize]byte
	b, bad, err := s.readHeader(&buf, e.pos)
	if err == nil && bad == nil && b.BaseOffset() == e.offset && b.CommitTimestamp() == e.ts {
		return e.pos, e.offset
	}
	l.opts.Logger.Warn("index entry does not match the segment; reading it from its start",
		"segment", s.path(logSuffix), "offset", e.offset, "pos", e.pos, "error", errors.Join(err, bad))
	return 0, s.base
}

// encodeIndexes serialises the in-memory index into the two index files' bytes.
func (s *segment) encodeIndexes() (idx, tidx []byte) {
	idx = make([]byte, 0, len(s.index)*indexEntrySize)
	tidx = make([]byte, 0, len(s.index)*timeEntrySize)
	for _, e := range s.index {
		idx = binary.LittleEndian.AppendUint32(idx, uint32(e.offset-s.base))
		idx = binary.LittleEndian.AppendUint32(idx, uint32(e.pos))
		tidx = binary.LittleEndian.AppendUint64(tidx, uint64(e.ts))
		tidx = binary.LittleEndian.AppendUint32(tidx, uint32(e.offset-s.base))
	}
	return idx, tidx
}

// decodeIndexes parses the index files; ok is false when they do not agree
// with each other or with a segment of size bytes, and the index must be rebuilt.
func (s *segment) decodeIndexes(idx, tidx []byte, size int64) ([]indexEntry, bool) {
	if len(idx)%indexEntrySize != 0 || len(tidx)%timeEntrySize != 0 || len(idx)/indexEntrySize != len(tidx)/timeEntrySize {
		return nil, false
	}
	n := len(idx) / indexEntrySize
	out := make([]indexEntry, n)
	for i := range out {
		rel := binary.LittleEndian.Uint32(idx[i*indexEntrySize:])
		pos := int64(binary.LittleEndian.Uint32(idx[i*indexEntrySize+4:]))
		ts := int64(binary.LittleEndian.Uint64(tidx[i*timeEntrySize:]))
		trel := binary.LittleEndian.Uint32(tidx[i*timeEntrySize+8:])
		if rel != trel || pos >= size || (i > 0 && (pos <= out[i-1].pos || ts < out[i-1].ts)) {
			return nil, false
		}
		out[i] = indexEntry{offset: s.base + int64(rel), pos: pos, ts: ts}
	}
	return out, true
}

// CorruptionError reports a batch of a segment that is not valid, or not
// where the log needs it: damaged on disk, torn by a crash, or missing. It
// wraps ErrCorrupt. Recovery reports the damage it cannot cut as a torn
// tail, and readers the damage they meet, with one.
type CorruptionError struct {
	Segment  string // path of the segment file
	Position int64  // position in the file of the bad batch (or of the end the batch is missing from)
	Offset   int64  // the offset the batch there must start at
	Err      error  // what is wrong; wraps ErrCorrupt
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corruption in segment %s at position %d (offset %d): %v", e.Segment, e.Position, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// corrupt returns a *CorruptionError for position pos of s, where the batch
// at offset must start. err wraps ErrCorrupt.
func (s *segment) corrupt(pos, offset int64, err error) *CorruptionError {
	return &CorruptionError{Segment: s.path(logSuffix), Position: pos, Offset: offset, Err: err}
}

// readHeader reads the fixed header of the batch at pos into buf and checks
// it (checkHeader). hdr holds what the file has, up to a version 2 header,
// so a header that the end of the file cuts short is bad, as is a damaged
// one: bad wraps ErrCorrupt. err is an I/O error.
func (s *segment) readHeader(buf *[HeaderSize]byte, pos int64) (hdr Batch, bad, err error) {
	n, err := s.f.ReadAt(buf[:], pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("read segment %s at %d: %w", s.path(logSuffix), pos, err)
	}
	hdr = Batch(buf[:n])
	if err := checkHeader(hdr); err != nil {
		return nil, err, nil
	}
	return hdr, nil, nil
}

// scanResult is what a scan of a segment file learnt.
type scanResult struct {
	end     int64 // position after the last good batch
	next    int64
	firstTS int64
	maxTS   int64
	index   []indexEntry
	writers map[int64]writerState
	bad     *CorruptionError // what stopped the scan, if anything did
}

// scan reads the segment file from pos, a batch boundary at which offset next
// starts, and checks every batch: its header (checkHeader), that it starts
// where the batch before it ended and lies within the file, and with verify
// the whole batch (Batch.Check: CRC and sections). With verify false only
// the headers are read. It stops at the end of the file or at the first bad
// batch, which it reports in bad.
func (s *segment) scan(pos, next int64, verify bool, interval int64, fileSize int64) (scanResult, error) {
	res := scanResult{end: pos, next: next, writers: map[int64]writerState{}}
	var hbuf [HeaderSize]byte
	var buf []byte
	for pos < fileSize {
		b, bad, err := s.readHeader(&hbuf, pos)
		if err != nil {
			return res, err
		}
		size := int64(0)
		if bad == nil {
			size = int64(b.Size())
			switch {
			case pos+size > fileSize:
				bad = fmt.Errorf("%w: batch of %d bytes overruns the file (%d bytes)", ErrCorrupt, size, fileSize)
			case b.BaseOffset() != res.next:
				bad = fmt.Errorf("%w: base offset %d, want %d", ErrCorrupt, b.BaseOffset(), res.next)
			}
		}
		if bad == nil && verify {
			if cap(buf) < int(size) {
				buf = make([]byte, size)
			}
			buf = buf[:size]
			if _, err := s.f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
				return res, fmt.Errorf("read segment %s at %d: %w", s.path(logSuffix), pos, err)
			}
			b, bad = Batch(buf), Batch(buf).Check()
		}
		if bad != nil {
			res.bad = s.corrupt(pos, res.next, bad)
			break
		}
		if n := len(res.index); n == 0 || pos-res.index[n-1].pos >= interval {
			res.index = append(res.index, indexEntry{offset: b.BaseOffset(), pos: pos, ts: b.CommitTimestamp()})
		}
		if res.firstTS == 0 {
			res.firstTS = b.CommitTimestamp()
		}
		res.maxTS = b.CommitTimestamp()
		if id := b.WriterID(); id != 0 {
			res.writers[id] = writerState{seq: b.WriterSeq(), base: b.BaseOffset(), count: b.RecordCount(), ts: b.CommitTimestamp()}
		}
		res.next = b.NextOffset()
		pos += size
		res.end = pos
	}
	return res, nil
}
