package columnarlog

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakestream/lakestream/internal/invariants"
)

// Errors callers test with errors.Is.
var (
	// ErrClosed is returned by operations on a closed log.
	ErrClosed = errors.New("log closed")
	// ErrOffsetOutOfRange is returned for a read below the log start or
	// above its end.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrOutOfOrderSequence is returned when a writer skips sequence numbers.
	ErrOutOfOrderSequence = errors.New("out of order writer sequence")
	// ErrBatchTooLarge is returned for a batch over Options.MaxBatchBytes.
	ErrBatchTooLarge = errors.New("batch too large")
	// ErrNotStored wraps the error of a write or commit round that failed
	// in the filesystem (a failed fsync, a full disk): the write is not
	// acknowledged and not kept, and the log refuses writes until a repair
	// cuts what it left (TableLog.Repair, or the next Append), so the same
	// call may be sent again.
	ErrNotStored = errors.New("write not stored")
)

// writerState is the last batch appended by an idempotent writer.
type writerState struct {
	seq   int32
	base  int64
	count int32
	ts    int64 // its commit timestamp, Unix microseconds
}

// AppendResult says where a batch landed.
type AppendResult struct {
	BaseOffset int64
	// Duplicate is set when the batch was a retry of one already appended
	// (same writer id and sequence); BaseOffset is then the original's.
	Duplicate bool
}

// Log is the append-only log of one bucket: a directory of segments. It is
// safe for concurrent use. Offsets count rows, are dense and start at 0.
//
// Only committed batches are visible to readers: with SyncAlways, those
// covered by an fsync; with SyncNever, those written; in a TableLog, those
// covered by a commit round; in a replicated TableLog, those below the high
// watermark too (replica.go).
type Log struct {
	dir  string
	opts Options

	// committed is the offset below which batches are visible to readers:
	// min(durable, hw). It never moves back.
	committed atomic.Int64
	// durable is the offset below which batches are durable (in a
	// TableLog, covered by a commit round). It moves back only by
	// Truncate, never below hw.
	durable atomic.Int64
	// hw is the high watermark: math.MaxInt64 in a log that is not
	// replicated, so that committed is durable. It never moves back, and is
	// at most durable.
	hw atomic.Int64
	// notify is closed and replaced whenever committed advances;
	// notifyDurable whenever durable moves.
	notify        atomic.Pointer[chan struct{}]
	notifyDurable atomic.Pointer[chan struct{}]
	// done is closed by Close, to release readers waiting on notify.
	done chan struct{}

	// cutMu keeps reads and Truncate apart: a Reader holds it shared while
	// it reads, Truncate exclusively while it cuts (reader.go, replica.go).
	cutMu sync.RWMutex
	// cutGen counts the truncations by Truncate (len(mu.cuts)), so that
	// a reader sees one without taking mu.
	cutGen atomic.Int64

	// sync serialises fsyncs of the active segment and carries the group
	// commit of standalone logs.
	sync groupCommit

	mu struct {
		sync.Mutex
		segments []*segment // by base offset; the last is active
		start    int64      // first offset still in the log
		next     int64      // offset of the next appended row
		lastTS   int64
		writers  map[int64]writerState
		// err is the sticky write error: the log refuses writes until it
		// is reopened or, in a TableLog, repaired (truncate clears it).
		err    error
		closed bool
		// badTail is the damage that ends the active segment, left in the
		// file by a recovery that does not cut it (open); truncate cuts it.
		badTail *CorruptionError
		// epoch is the leader epoch Append stamps (BecomeLeader).
		epoch int32
		// epochs is the leader-epoch history of a replicated log
		// (epochs.go), oldest first; nil otherwise.
		epochs []EpochEntry
		// cuts are the offsets Truncate cut the log to, in order.
		cuts []int64
	}
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// Committed is the offset below which every row is visible to readers:
// durable with SyncAlways, and in a replicated log at most the high
// watermark.
func (l *Log) Committed() int64 { return l.committed.Load() }

// Durable is the offset below which every batch is durable (per
// Options.Sync; in a TableLog, covered by a commit round): what a
// follower may fetch (NewReplicaReader). It is Committed in a log that is
// not replicated.
func (l *Log) Durable() int64 { return l.durable.Load() }

// Start is the first offset still in the log (retention moves it up).
func (l *Log) Start() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.start
}

// Notify returns a channel closed the next time Committed advances, so
// readers wait for new data without polling. Take it before reading, so
// that a commit between the read and the wait is not missed.
func (l *Log) Notify() <-chan struct{} { return *l.notify.Load() }

// NotifyDurable returns a channel closed the next time Durable moves (up
// by a commit, or down by Truncate): a leader's fetch handler long-polls
// on it. Take it before reading, as for Notify.
func (l *Log) NotifyDurable() <-chan struct{} { return *l.notifyDurable.Load() }

// Done is closed when the log is closed: no more data will come.
func (l *Log) Done() <-chan struct{} { return l.done }

// signal closes the channel ch holds and replaces it.
func signal(ch *atomic.Pointer[chan struct{}]) {
	c := make(chan struct{})
	old := ch.Swap(&c)
	close(*old)
}

// raise moves v up to x and reports whether it moved.
func raise(v *atomic.Int64, x int64) bool {
	for {
		cur := v.Load()
		if x <= cur {
			return false
		}
		if v.CompareAndSwap(cur, x) {
			return true
		}
	}
}

// publish makes the log durable up to offset d, and visible as far as the
// high watermark lets it.
func (l *Log) publish(d int64) {
	// Invariant: committed <= written end. Only what was written can be
	// made durable and visible.
	if invariants.Enabled {
		l.mu.Lock()
		next := l.mu.next
		l.mu.Unlock()
		if d > next {
			invariants.Failf("committed <= written end", "publishing %d in %s, written up to %d", d, l.dir, next)
		}
	}
	if raise(&l.durable, d) {
		signal(&l.notifyDurable)
	}
	l.refreshCommitted()
}

// refreshCommitted moves committed up to min(durable, hw) and wakes the
// readers waiting on Notify.
func (l *Log) refreshCommitted() {
	if raise(&l.committed, min(l.durable.Load(), l.hw.Load())) {
		signal(&l.notify)
	}
}

// Append writes a batch and returns once it is durable (per Options.Sync)
// and visible. The batch's server fields are stamped in place.
func (l *Log) Append(b Batch) (AppendResult, error) {
	res, end, err := l.write(b, true)
	if err != nil || res.Duplicate {
		return res, err
	}
	if err := l.sync.wait(end, l.syncTo); err != nil {
		return res, err
	}
	return res, nil
}

// syncTo makes the log durable up to at least end, publishes what it made
// durable and returns that offset.
func (l *Log) syncTo() (int64, error) {
	target, err := l.syncData()
	if err != nil {
		return 0, err
	}
	l.publish(target)
	return target, nil
}

// write appends a batch to the active segment without syncing it. It returns
// the offset after it. With check, a batch of an idempotent writer is
// checked against the writer's last batch in this log (checkWriterLocked);
// a TableLog's buckets are not checked, since one write of a table spreads
// over them (its caller checks whole writes, TableLog.Writers).
func (l *Log) write(b Batch, check bool) (AppendResult, int64, error) {
	if len(b) > l.opts.MaxBatchBytes {
		return AppendResult{}, 0, fmt.Errorf("append %d bytes: %w (limit %d)", len(b), ErrBatchTooLarge, l.opts.MaxBatchBytes)
	}
	if err := b.Check(); err != nil {
		return AppendResult{}, 0, fmt.Errorf("append: %w", err)
	}
	if m := b.Magic(); m != MagicV2 {
		return AppendResult{}, 0, fmt.Errorf("append: a batch of format version %d: logs write version %d", m, MagicV2)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return AppendResult{}, 0, err
	}
	if check {
		if dup, ok, err := l.checkWriterLocked(b); err != nil || ok {
			return dup, 0, err
		}
	}
	if last := l.lastEpochLocked(); last > l.mu.epoch {
		// A follower's log holds batches of a newer leader: stamping its
		// own, older epoch after them would fork the history.
		return AppendResult{}, 0, fmt.Errorf("append with leader epoch %d: the log holds epoch %d: %w", l.mu.epoch, last, ErrFencedEpoch)
	}
	base := l.mu.next
	if err := l.noteEpochLocked(l.mu.epoch, base); err != nil {
		return AppendResult{}, 0, fmt.Errorf("append: %w", err)
	}
	b.stamp(base, max(l.opts.Now().UnixMicro(), l.mu.lastTS), l.mu.epoch)
	if err := l.storeLocked(b); err != nil {
		return AppendResult{}, 0, err
	}
	return AppendResult{BaseOffset: base}, l.mu.next, nil
}

// storeLocked writes batch b, stamped, at the end of the log: the active
// segment, rolled first when b would overflow it or it has grown old. An
// I/O error is sticky (l.mu.err).
func (l *Log) storeLocked(b Batch) error {
	ts := b.CommitTimestamp()
	if err := l.maybeRollLocked(int64(len(b)), ts); err != nil {
		l.mu.err = err
		return err
	}
	base := b.BaseOffset()
	seg := l.mu.segments[len(l.mu.segments)-1]
	// Invariant: offsets are dense and increasing. A batch's base offset is
	// the log's end, where the active (unsealed) segment ends too.
	if invariants.Enabled && (seg.next != base || l.mu.next != base || seg.sealed) {
		invariants.Failf("dense offsets", "batch at %d in %s, log ends at %d, active segment %d ends at %d (sealed %t)",
			base, l.dir, l.mu.next, seg.base, seg.next, seg.sealed)
	}
	pos := seg.size
	if _, err := seg.f.Write(b); err != nil {
		// A short write leaves a torn tail in the file; the log refuses
		// writes until reopened, when recovery cuts it, or until its
		// TableLog repairs it (truncate).
		l.mu.err = fmt.Errorf("write segment %s: %w", segmentName(seg.base, logSuffix), err)
		return l.mu.err
	}
	seg.size += int64(len(b))
	seg.maybeIndexLocked(b, pos, l.opts.IndexIntervalBytes)
	if seg.firstTS == 0 {
		seg.firstTS = ts
	}
	seg.maxTS = ts
	l.mu.lastTS = ts
	l.mu.next = b.NextOffset()
	seg.next = l.mu.next
	if id := b.WriterID(); id != 0 {
		l.mu.writers[id] = writerState{seq: b.WriterSeq(), base: base, count: b.RecordCount(), ts: ts}
	}
	return nil
}

// end is the offset after the log's last batch, committed or not.
func (l *Log) end() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.next
}

// tail returns the log's end and whether a failed write or sync left it
// refusing writes (maybe with bytes after the end).
func (l *Log) tail() (end int64, failed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.next, l.mu.err != nil
}

func (l *Log) usableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	return l.mu.err
}

// checkWriterLocked applies idempotence: ok is true when b repeats the last
// batch of its writer.
func (l *Log) checkWriterLocked(b Batch) (AppendResult, bool, error) {
	id := b.WriterID()
	if id == 0 {
		return AppendResult{}, false, nil
	}
	st, seen := l.mu.writers[id]
	switch {
	case !seen:
		return AppendResult{}, false, nil
	case b.WriterSeq() == st.seq:
		return AppendResult{BaseOffset: st.base, Duplicate: true}, true, nil
	case b.WriterSeq() != st.seq+1:
		return AppendResult{}, false, fmt.Errorf("writer %d: sequence %d after %d: %w", id, b.WriterSeq(), st.seq, ErrOutOfOrderSequence)
	}
	return AppendResult{}, false, nil
}

// expireWriters drops the writers whose last batch is older than expiry:
// their state is not kept for ever, and a writer that comes back after
// that long is a new one.
func expireWriters(writers map[int64]writerState, now time.Time, expiry time.Duration) {
	cut := now.Add(-expiry).UnixMicro()
	for id, st := range writers {
		if st.ts < cut {
			delete(writers, id)
		}
	}
}

// syncData fsyncs the active segment and returns the offset it covers.
// Sealed segments were synced when they were rolled.
func (l *Log) syncData() (int64, error) {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	seg := l.mu.segments[len(l.mu.segments)-1]
	target, size := l.mu.next, seg.size
	seg.acquire()
	l.mu.Unlock()
	defer seg.release()

	if l.opts.Sync == SyncAlways {
		began := time.Now()
		err := seg.f.Sync()
		if l.opts.OnSync != nil {
			l.opts.OnSync("segment", time.Since(began))
		}
		if err != nil {
			err = fmt.Errorf("sync segment %s: %w", segmentName(seg.base, logSuffix), err)
			l.mu.Lock()
			l.mu.err = err // an fsync error is never retried: the page cache may have dropped the data
			l.mu.Unlock()
			return 0, err
		}
	}
	l.mu.Lock()
	seg.synced = max(seg.synced, size)
	l.mu.Unlock()
	return target, nil
}

// maybeRollLocked seals the active segment when the next batch would push it
// over the size limit or it has grown too old.
func (l *Log) maybeRollLocked(n int64, ts int64) error {
	seg := l.mu.segments[len(l.mu.segments)-1]
	if seg.size == 0 {
		return nil
	}
	full := seg.size+n > l.opts.SegmentBytes
	old := ts-seg.firstTS >= l.opts.SegmentAge.Microseconds()
	if !full && !old {
		return nil
	}
	return l.rollLocked()
}

// rollLocked seals the active segment (sync, index files) and starts a new
// one at the next offset. A roll that fails leaves the active segment
// active and no new segment (files it wrote for the sealed segment are
// rewritten by the next roll).
func (l *Log) rollLocked() error {
	seg := l.mu.segments[len(l.mu.segments)-1]
	if err := seg.f.Sync(); err != nil {
		return fmt.Errorf("roll: sync segment %s: %w", segmentName(seg.base, logSuffix), err)
	}
	seg.synced = seg.size
	if err := l.writeIndexes(seg); err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	expireWriters(l.mu.writers, l.opts.Now(), l.opts.WriterExpiry)
	if err := writeWriterSnapshot(l.opts.FS, l.dir, l.mu.next, l.mu.writers); err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	ns, err := l.createSegment(l.mu.next)
	if err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	seg.sealed = true
	l.mu.segments = append(l.mu.segments, ns)
	l.checkSegmentsLocked()
	return nil
}

// checkSegmentsLocked checks, when invariants are enabled, that the segments
// tile the log. Callers run it where the segment list changes: roll,
// recovery, truncation and retention.
func (l *Log) checkSegmentsLocked() {
	if !invariants.Enabled {
		return
	}
	segs := l.mu.segments
	// Invariant: the log has at least one segment; the last is active and
	// ends at the log's end; the log starts at the first.
	if n := len(segs); n == 0 || segs[n-1].sealed || segs[n-1].next != l.mu.next || segs[0].base != l.mu.start {
		invariants.Failf("segments tile the log", "%s: %s, start %d, end %d", l.dir, describeSegmentsLocked(segs), l.mu.start, l.mu.next)
	}
	// Invariant: segment base offsets strictly increase, and each sealed
	// segment ends where the next begins.
	for i := 1; i < len(segs); i++ {
		if !segs[i-1].sealed || segs[i-1].next != segs[i].base || segs[i-1].base >= segs[i].base {
			invariants.Failf("segments tile the log", "%s: %s", l.dir, describeSegmentsLocked(segs))
		}
	}
}

// describeSegmentsLocked lists segments for an invariant's message.
func describeSegmentsLocked(segs []*segment) string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = fmt.Sprintf("[%d,%d) sealed %t", s.base, s.next, s.sealed)
	}
	return fmt.Sprint(out)
}

func (l *Log) createSegment(base int64) (*segment, error) {
	s := &segment{base: base, dir: l.dir, next: base}
	f, err := l.opts.FS.Create(s.path(logSuffix))
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", base, err)
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		// The file could outlive a crash without its data: a segment
		// recovery would take for the active one. truncate removes it
		// if this removal fails too.
		f.Close()
		if rerr := l.opts.FS.Remove(s.path(logSuffix)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			l.opts.Logger.Warn("remove segment after a failed create", "segment", s.path(logSuffix), "error", rerr)
		}
		return nil, fmt.Errorf("create segment %d: sync dir: %w", base, err)
	}
	s.f = f
	s.refs.Store(1)
	return s, nil
}

// writeIndexes writes a sealed segment's index files. They are a cache of
// the log file: no directory sync, a lost or torn one is rebuilt on open.
func (l *Log) writeIndexes(s *segment) error {
	idx, tidx := s.encodeIndexes()
	for _, f := range []struct {
		suffix string
		data   []byte
	}{{indexSuffix, idx}, {timeIndexSuffix, tidx}} {
		if err := writeFileSync(l.opts.FS, s.path(f.suffix), f.data); err != nil {
			return err
		}
	}
	return nil
}

// Close syncs and closes the log. Readers still open keep their segments
// until they close.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	close(l.done)
	var errs []error
	if len(l.mu.segments) > 0 && l.mu.err == nil && l.opts.Sync == SyncAlways {
		if err := l.mu.segments[len(l.mu.segments)-1].f.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range l.mu.segments {
		if err := s.release(); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.segments = nil
	return errors.Join(errs...)
}

// Remove closes the log and deletes its directory.
func (l *Log) Remove() error {
	err := l.Close()
	if rerr := l.opts.FS.RemoveAll(l.dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}
