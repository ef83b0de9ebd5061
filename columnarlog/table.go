package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakestream/lakestream/internal/invariants"
	"github.com/lakestream/lakestream/internal/vfs"
)

// TableLog is the logs of a table's buckets plus a commit file that makes a
// write spanning several buckets atomic: after a crash, either all of its
// parts are visible or none is.
//
// A write appends its parts to the bucket logs (unsynced) under a table lock,
// so every bucket sees writes in the same order. A commit round then appends
// to the commit file the end offset of every bucket as of the round's start,
// and syncs the bucket logs and the commit file in parallel; only once all
// of them are durable are the rows visible and the writes acknowledged.
// Rounds are shared by concurrent writers (group commit) and run one at a
// time, so when a round starts the previous one is wholly durable.
//
// Recovery truncates each bucket to the end offsets of the last valid commit
// record whose data every bucket holds. A crash in the middle of a round can
// leave its record durable and some of its data not; that record is then
// skipped for the one before it, which is always whole, and the round's
// writes, none of them acknowledged, are dropped. (A crash is assumed: data
// of the last round lost after it was acknowledged, by damage, looks the
// same. Close leaves a single record, so after a clean close such a loss is
// reported as corruption.) Syncing the data first and the record after it
// was rejected: it puts two fsync latencies in a row, and that latency is
// much of an ingest call (BenchmarkTableAppend; the figures are in
// docs/benchmarks.md).
//
// The commit file, "commits", is a sequence of records:
//
//	length uint32 (bytes after this field) | sequence uint64 | bucket count uint32
//	| bucket count × end offset int64 | CRC-32C uint32 of sequence..end offsets
//
// It is rewritten with only its last record on open, on Close and when it
// grows past commitFileMax, through a temporary file and a rename; a round that
// rewrites it syncs the bucket logs first, as the record it drops is the
// one recovery would fall back to.
//
// A write or a commit round that fails (a full disk, an I/O error) leaves
// writes that were not acknowledged in the bucket files, above the
// committed ends, and maybe a commit record that covers some of them. The
// log then refuses writes (Err) until it is repaired, which the next Append
// tries first: once every write the failure concerned has returned, the
// commit file is rewritten with the committed ends alone, and every bucket
// cut back to its committed end (truncate). So no acknowledged row is lost
// (nothing at or below the committed ends is touched), no refused row
// becomes visible, then or after a crash (the commit file names none), and
// the offsets the refused writes had are given to new writes only once no
// reader can have seen them (readers stop at the committed ends). A repair
// that fails, the disk still full, leaves the log as it was, refusing
// writes, and the next Append tries again.
type TableLog struct {
	dir     string
	opts    Options
	buckets []*Log

	// wmu orders writes: parts of one write are appended to every bucket
	// before any part of the next. It guards seq, written and err.
	wmu sync.Mutex
	seq int64 // writes so far
	// written are the bucket ends after the last whole write: a commit
	// round commits up to them, never into a write that failed half way.
	written []int64
	// err refuses writes: ErrClosed, or the failure of a write or a commit
	// round, which the next write repairs (repairLocked).
	err error
	// inflight counts the writes written and not yet told their outcome
	// (waiting for their commit round). A repair waits for it to be 0: a
	// write it cuts must not be acknowledged by a later round.
	inflight atomic.Int64

	commit groupCommit // over write sequence numbers

	cmu   sync.Mutex // guards the commit file
	cfile vfs.File
	csize int64

	// durable are the bucket end offsets of the last published commit
	// round, replaced (never modified) after each: a snapshot consistent
	// across buckets. Only Truncate moves one back.
	durable atomic.Pointer[[]int64]
	// ends are the ends visible to readers: durable, or in a replicated
	// table each bucket's Committed (min(durable, high watermark)),
	// replaced whenever one moves.
	ends atomic.Pointer[[]int64]

	// hmu orders the changes of a replicated table's high watermarks and
	// of t.ends with them, and guards the checkpoint file.
	hmu sync.Mutex
	// checkpointed are the high watermarks the checkpoint file holds.
	checkpointed []int64
}

// CommittedEnds returns every bucket's committed end offset as of the last
// commit round: a write spanning several buckets is in it entirely or not
// at all. In a replicated table, each is its bucket's durable end capped by
// its high watermark (SetHighWatermark), and moves with it. Each value is
// at most that bucket's Committed. Callers must not modify the slice.
func (t *TableLog) CommittedEnds() []int64 { return *t.ends.Load() }

// DurableEnds returns every bucket's durable end as of the last commit
// round: what followers may fetch. It is CommittedEnds in a table that is
// not replicated. Callers must not modify the slice.
func (t *TableLog) DurableEnds() []int64 { return *t.durable.Load() }

// Err reports why the log refuses writes, nil while it accepts them: a
// write that failed part-way, or a commit round whose sync failed. The next
// Append repairs the log first (see TableLog) and clears it, or fails with
// an error that wraps it. It is for status reports (a node's /healthz).
func (t *TableLog) Err() error {
	t.wmu.Lock()
	err := t.err
	t.wmu.Unlock()
	if err != nil {
		return err
	}
	t.commit.mu.Lock()
	defer t.commit.mu.Unlock()
	return t.commit.err
}

const (
	commitFileName = "commits"
	commitFileMax  = 1 << 20
)

// OpenTable opens or creates the logs of a table with n buckets in dir.
func OpenTable(dir string, n int, opts Options) (*TableLog, error) {
	opts.EnsureDefaults()
	if n < 1 {
		return nil, fmt.Errorf("open table log %s: %d buckets, want at least 1", dir, n)
	}
	t := &TableLog{dir: dir, opts: opts}
	if err := t.open(n); err != nil {
		t.closeAll()
		return nil, fmt.Errorf("open table log %s: %w", dir, err)
	}
	return t, nil
}

func (t *TableLog) open(n int) error {
	fs := t.opts.FS
	if err := fs.MkdirAll(t.dir, 0o755); err != nil {
		return err
	}
	recs, err := readLastCommits(fs, path.Join(t.dir, commitFileName), n, t.opts.Sync == SyncAlways)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if len(r) != n {
			return fmt.Errorf("commit file has %d buckets, table has %d", len(r), n)
		}
	}
	for b := 0; b < n; b++ {
		// A damaged tail stays in the file until recoverBucket knows
		// whether it held committed data.
		l, err := open(path.Join(t.dir, strconv.Itoa(b)), t.opts, false)
		if err != nil {
			return err
		}
		t.buckets = append(t.buckets, l)
	}
	// A restart (RestartAt) a crash interrupted is finished first: the
	// bucket may be half deleted, which must not make the commit record
	// look unfinished.
	restarted := map[int]int64{}
	for b, l := range t.buckets {
		start, ok, err := readRestartMarker(fs, l.dir)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t.opts.Logger.Warn("finishing an interrupted restart of the log", "dir", l.dir, "start", start)
		if err := l.restart(start); err != nil {
			return fmt.Errorf("bucket %d: restart at %d: %w", b, start, err)
		}
		restarted[b] = start
	}
	ends, found := t.pickCommit(recs)
	if !found {
		ends = make([]int64, n)
		for b, l := range t.buckets {
			if next := l.Stats().Next; next > 0 && restarted[b] != next {
				return fmt.Errorf("bucket %d holds offsets up to %d but there is no commit file: %w", b, next, ErrCorrupt)
			}
		}
	}
	for b, start := range restarted {
		if start < ends[b] {
			return fmt.Errorf("bucket %d restarted at %d, below its committed end %d: %w", b, start, ends[b], ErrCorrupt)
		}
		ends[b] = start
	}
	for b, l := range t.buckets {
		if err := t.recoverBucket(b, l, ends[b]); err != nil {
			return err
		}
	}
	t.durable.Store(&ends)
	t.ends.Store(&ends)
	if t.opts.Replicated {
		if err := t.openReplicated(); err != nil {
			return err
		}
	}
	t.written = append([]int64(nil), ends...)
	if err := t.rewriteCommitFile(0, ends); err != nil {
		return err
	}
	for b := range restarted {
		if err := removeRestartMarker(fs, t.buckets[b].dir); err != nil {
			return err
		}
	}
	return nil
}

// pickCommit chooses the commit record to recover to from the file's last
// records, oldest first: the last one, unless a bucket lacks some of its
// data (a crash during its round), then the one before it.
func (t *TableLog) pickCommit(recs [][]int64) ([]int64, bool) {
	if len(recs) == 0 {
		return nil, false
	}
	last := recs[len(recs)-1]
	if len(recs) == 1 || t.holds(last) {
		return last, true
	}
	t.opts.Logger.Warn("dropping the last commit record: its round did not finish", "dir", t.dir, "ends", last)
	return recs[len(recs)-2], true
}

// holds reports whether every bucket holds its data up to ends.
func (t *TableLog) holds(ends []int64) bool {
	for b, l := range t.buckets {
		if l.Stats().Next < ends[b] {
			return false
		}
	}
	return true
}

// recoverBucket cuts a bucket back to its committed end, and its damaged
// tail with it. A bucket whose batches, or whose good batches, end below
// its committed end lost committed data: a *CorruptionError, and the file
// is left as it is.
func (t *TableLog) recoverBucket(b int, l *Log, end int64) error {
	l.mu.Lock()
	next, bad := l.mu.next, l.mu.badTail
	active := l.mu.segments[len(l.mu.segments)-1]
	size := active.size
	l.mu.Unlock()
	switch {
	case next < end:
		if bad == nil {
			bad = active.corrupt(size, next, fmt.Errorf("%w: the log ends at offset %d", ErrCorrupt, next))
		}
		return fmt.Errorf("bucket %d: committed offsets [%d, %d) are lost: %w", b, next, end, bad)
	case next > end || bad != nil:
		if bad != nil {
			t.opts.Logger.Warn("truncating torn or damaged log tail", "dir", l.dir, "error", bad)
		}
		if next > end {
			t.opts.Logger.Warn("dropping uncommitted batches", "dir", l.dir, "from", end, "to", next)
		}
		if err := l.truncate(end); err != nil {
			return fmt.Errorf("bucket %d: %w", b, err)
		}
	}
	// Invariant: a recovered bucket ends at its committed end: what the
	// record covers is all there, and nothing it does not cover survives.
	if invariants.Enabled {
		if next := l.Stats().Next; next != end {
			invariants.Failf("recovered end == committed end", "bucket %d ends at %d, committed end %d", b, next, end)
		}
	}
	if !t.opts.Replicated {
		l.hw.Store(math.MaxInt64)
	}
	l.durable.Store(end)
	l.committed.Store(min(end, l.hw.Load()))
	return nil
}

// Buckets is the number of buckets.
func (t *TableLog) Buckets() int { return len(t.buckets) }

// Bucket returns the log of bucket b, for reading.
func (t *TableLog) Bucket(b int) *Log { return t.buckets[b] }

// Append writes the batches parts[b] to bucket b (empty parts are skipped)
// as one atomic write and returns once it is committed, with the result of
// each batch. The batches' writer ids and sequences are stored (and given
// back by Writers) but not checked: one write of an idempotent writer
// spreads over the buckets differently each time (round-robin), so only
// the caller, who sees whole writes, can tell a retry (tables does).
func (t *TableLog) Append(parts [][]Batch) ([][]AppendResult, error) {
	if len(parts) != len(t.buckets) {
		return nil, fmt.Errorf("append: %d parts for %d buckets", len(parts), len(t.buckets))
	}
	for b, part := range parts {
		for _, p := range part {
			if len(p) > t.opts.MaxBatchBytes {
				return nil, fmt.Errorf("append to bucket %d: %d bytes: %w (limit %d)", b, len(p), ErrBatchTooLarge, t.opts.MaxBatchBytes)
			}
			if err := p.Check(); err != nil {
				return nil, fmt.Errorf("append to bucket %d: %w", b, err)
			}
		}
	}
	seq, res, err := t.write(parts)
	if err != nil || seq == 0 {
		return res, err
	}
	err = t.commit.wait(seq, t.commitRound)
	t.inflight.Add(-1)
	return res, err
}

// Repair makes a log that refuses writes after a failed write or commit
// round take them again, as the next Append would (repairLocked), so that a
// table nobody writes to recovers too once its cause is gone (a disk with
// room again). It does nothing to a log that accepts writes, and returns
// the error that still makes it refuse them.
func (t *TableLog) Repair() error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.err == nil {
		return nil
	}
	return t.repairLocked()
}

// write appends the parts under the table lock and returns the write's
// sequence number (0 for a duplicate). A log that refuses writes after a
// failure is repaired first.
func (t *TableLog) write(parts [][]Batch) (int64, [][]AppendResult, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.err != nil {
		if err := t.repairLocked(); err != nil {
			return 0, nil, err
		}
	}
	if err := t.checkEpochsLocked(parts); err != nil {
		return 0, nil, err
	}
	res := make([][]AppendResult, len(parts))
	for b, part := range parts {
		res[b] = make([]AppendResult, len(part))
		for i, p := range part {
			r, _, err := t.buckets[b].write(p, false)
			if err != nil {
				// Batches already written are not committed (a round
				// commits up to t.written): the table refuses writes
				// until a repair cuts them.
				t.err = fmt.Errorf("%w: bucket %d: %w", ErrNotStored, b, err)
				return 0, nil, t.err
			}
			res[b][i] = r
		}
	}
	for b, part := range parts {
		if len(part) > 0 {
			t.written[b] = t.buckets[b].end()
		}
	}
	t.seq++
	t.inflight.Add(1)
	return t.seq, res, nil
}

// repairLocked makes the log take writes again after a failed write or
// commit round (see TableLog): it rewrites the commit file with the
// committed ends alone, so that no record names what it cuts, then cuts
// every bucket that holds more back to its committed end. It runs only once
// every write the failure concerned has returned (inflight is 0), so that
// no commit round runs and none of those writes is acknowledged after it.
// On success it clears the error; otherwise the log stays as it was,
// refusing writes, and the error says why.
func (t *TableLog) repairLocked() error {
	if errors.Is(t.err, ErrClosed) {
		return t.err
	}
	if n := t.inflight.Load(); n > 0 {
		return fmt.Errorf("%w (not repaired yet: %d writes it failed are still returning)", t.err, n)
	}
	ends := t.DurableEnds()
	if err := t.rewriteCommitFile(t.seq, ends); err != nil {
		return fmt.Errorf("%w (repair: %w)", t.err, err)
	}
	for b, l := range t.buckets {
		if end, failed := l.tail(); end == ends[b] && !failed {
			continue
		}
		if err := l.truncate(ends[b]); err != nil {
			return fmt.Errorf("%w (repair: bucket %d: %w)", t.err, b, err)
		}
	}
	t.opts.Logger.Warn("repaired the log after a failed write: cut the writes not acknowledged",
		"dir", t.dir, "ends", ends, "error", t.err)
	t.written = append(t.written[:0], ends...)
	t.commit.restart(t.seq)
	t.err = nil
	return nil
}

// checkEpochsLocked refuses a write to a bucket whose log holds a newer
// leader epoch than the one it appends with (a deposed leader's), before
// anything is written, so that the refusal leaves the table writable
// (Log.write checks it too).
func (t *TableLog) checkEpochsLocked(parts [][]Batch) error {
	for b, part := range parts {
		if len(part) == 0 {
			continue
		}
		l := t.buckets[b]
		l.mu.Lock()
		last, epoch := l.lastEpochLocked(), l.mu.epoch
		l.mu.Unlock()
		if last > epoch {
			return fmt.Errorf("bucket %d: append with leader epoch %d: the log holds epoch %d: %w", b, epoch, last, ErrFencedEpoch)
		}
	}
	return nil
}

// WriterState is what a TableLog holds of an idempotent writer: the
// sequence number of its last write and when that was committed.
type WriterState struct {
	Seq int32
	// Timestamp is the commit timestamp of the writer's last batch, Unix
	// microseconds.
	Timestamp int64
}

// Writers returns the idempotent writers of the table's log, each with the
// highest sequence number any bucket holds of it: every batch of a write
// carries the writer's id and the write's sequence, and a writer's
// sequences increase, so that is its last write (that reached the log).
// Writers idle for longer than Options.WriterExpiry may be left out.
func (t *TableLog) Writers() map[int64]WriterState {
	out := map[int64]WriterState{}
	for _, l := range t.buckets {
		l.mu.Lock()
		for id, st := range l.mu.writers {
			cur, ok := out[id]
			if !ok || st.seq > cur.Seq {
				cur.Seq = st.seq
			}
			cur.Timestamp = max(cur.Timestamp, st.ts)
			out[id] = cur
		}
		l.mu.Unlock()
	}
	return out
}

// Writer returns what Writers returns of one writer, and whether any
// bucket holds a batch of it.
func (t *TableLog) Writer(id int64) (WriterState, bool) {
	var out WriterState
	found := false
	for _, l := range t.buckets {
		l.mu.Lock()
		if st, ok := l.mu.writers[id]; ok {
			if !found || st.seq > out.Seq {
				out.Seq = st.seq
			}
			out.Timestamp = max(out.Timestamp, st.ts)
			found = true
		}
		l.mu.Unlock()
	}
	return out, found
}

// WriterBatch is where a writer's last batch in one bucket ends.
type WriterBatch struct {
	Bucket int
	Seq    int32
	End    int64 // the offset after the batch
}

// WriterBatches returns, for each bucket holding a batch of writer id,
// its last one.
func (t *TableLog) WriterBatches(id int64) []WriterBatch {
	var out []WriterBatch
	for b, l := range t.buckets {
		l.mu.Lock()
		if st, ok := l.mu.writers[id]; ok {
			out = append(out, WriterBatch{Bucket: b, Seq: st.seq, End: st.base + int64(st.count)})
		}
		l.mu.Unlock()
	}
	return out
}

// commitRound syncs every bucket written since the last round, records their
// end offsets in the commit file and publishes them.
func (t *TableLog) commitRound() (int64, error) {
	t.wmu.Lock()
	seq := t.seq
	ends := append([]int64(nil), t.written...)
	t.wmu.Unlock()

	// Invariant: committed ends never move back, but by Truncate, which
	// never cuts below the high watermark (the visible end). Rounds run one
	// at a time (groupCommit), and each starts from what the writes before
	// it left, or the cut that Truncate made with no round in flight.
	if invariants.Enabled {
		durable, visible := t.DurableEnds(), t.CommittedEnds()
		for b := range ends {
			if prev := max(durable[b], visible[b]); ends[b] < prev {
				invariants.Failf("committed ends never move back", "round %d: bucket %d end %d below %d", seq, b, ends[b], prev)
			}
		}
	}
	if err := t.persist(seq, ends); err != nil {
		// The writes of the round and those after it are not
		// acknowledged; the log refuses writes until a repair cuts them.
		err = fmt.Errorf("%w: commit round: %w", ErrNotStored, err)
		t.wmu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.wmu.Unlock()
		return 0, err
	}
	for b, l := range t.buckets {
		l.publish(ends[b])
	}
	t.durable.Store(&ends)
	if !t.opts.Replicated {
		t.ends.Store(&ends)
	}
	return seq, nil
}

// persist makes a round durable: the bucket data up to ends and the commit
// record of seq. The record is appended, and every fsync runs, in parallel
// (see TableLog); a round that rewrites the commit file syncs the data first.
func (t *TableLog) persist(seq int64, ends []int64) error {
	if t.commitFileFull() {
		if err := t.syncBuckets(ends, nil); err != nil {
			return err
		}
		return t.rewriteCommitFile(seq, ends)
	}
	return t.syncBuckets(ends, func() error { return t.appendCommit(seq, ends) })
}

// syncBuckets fsyncs, in parallel, the buckets with data not yet committed,
// and runs also, if not nil, alongside them.
func (t *TableLog) syncBuckets(ends []int64, also func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(t.buckets)+1)
	for b, l := range t.buckets {
		if ends[b] <= l.Durable() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[b] = l.syncData()
		}()
	}
	if also != nil {
		errs[len(t.buckets)] = also()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func encodeCommit(seq int64, ends []int64) []byte {
	buf := make([]byte, 4, 4+8+4+8*len(ends)+4)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(seq))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(ends)))
	for _, e := range ends {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(e))
	}
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf[4:], castagnoli))
	binary.LittleEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// commitFileFull reports whether the next round rewrites the commit file.
func (t *TableLog) commitFileFull() bool {
	t.cmu.Lock()
	defer t.cmu.Unlock()
	return t.csize > commitFileMax
}

// appendCommit appends, and syncs per Options.Sync, the record of a round.
func (t *TableLog) appendCommit(seq int64, ends []int64) error {
	t.cmu.Lock()
	defer t.cmu.Unlock()
	rec := encodeCommit(seq, ends)
	if _, err := t.cfile.Write(rec); err != nil {
		return fmt.Errorf("write commit record: %w", err)
	}
	t.csize += int64(len(rec))
	if t.opts.Sync == SyncAlways {
		began := time.Now()
		err := t.cfile.Sync()
		if t.opts.OnSync != nil {
			t.opts.OnSync("commit", time.Since(began))
		}
		if err != nil {
			return fmt.Errorf("sync commit file: %w", err)
		}
	}
	return nil
}

func (t *TableLog) rewriteCommitFile(seq int64, ends []int64) error {
	t.cmu.Lock()
	defer t.cmu.Unlock()
	return t.rewriteCommitFileLocked(seq, ends)
}

// rewriteCommitFileLocked replaces the commit file by one holding a single
// record, atomically.
func (t *TableLog) rewriteCommitFileLocked(seq int64, ends []int64) error {
	fs := t.opts.FS
	rec := encodeCommit(seq, ends)
	if err := replaceFile(fs, t.dir, commitFileName, rec); err != nil {
		return err
	}
	f, err := fs.OpenAppend(path.Join(t.dir, commitFileName))
	if err != nil {
		return err
	}
	if t.cfile != nil {
		t.cfile.Close()
	}
	t.cfile, t.csize = f, int64(len(rec))
	return nil
}

// readLastCommits returns the end offsets of the last two valid records of
// the commit file of a table of n buckets, oldest first, or none if there is
// no file.
//
// A torn or damaged last record ends the file: it may be a round that a
// crash cut short. Only the last record can be torn, since a round syncs its
// record before the next round starts; a damaged record with a whole record
// after it was synced, and the rounds after it acknowledged, so it is
// corruption, not a tail to cut. With SyncNever (synced false) records are
// not synced and any of them may be torn: the file ends at the first bad one.
func readLastCommits(fs vfs.FS, name string, n int, synced bool) ([][]int64, error) {
	buf, err := readFile(fs, name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	frame := 4 + 8 + 4 + 8*n + 4 // the size of every record of the table
	var prev, last []int64
	for pos := 0; pos < len(buf); {
		_, ends, size, ok := decodeCommit(buf[pos:])
		if !ok {
			if synced && len(buf)-pos > frame {
				return nil, fmt.Errorf("commit file %s: the record at byte %d is damaged, and %d bytes follow it: %w",
					name, pos, len(buf)-pos-frame, ErrCorrupt)
			}
			break
		}
		prev, last = last, ends
		pos += size
	}
	switch {
	case last == nil:
		return nil, fmt.Errorf("commit file %s holds no valid record: %w", name, ErrCorrupt)
	case prev == nil:
		return [][]int64{last}, nil
	}
	return [][]int64{prev, last}, nil
}

// decodeCommit decodes the record at the start of buf and returns its
// sequence number, its end offsets and its size; ok is false for a record
// that is cut off or fails its checks.
func decodeCommit(buf []byte) (seq int64, ends []int64, size int, ok bool) {
	if len(buf) < 4 {
		return 0, nil, 0, false
	}
	n := int(binary.LittleEndian.Uint32(buf))
	if n < 16 || n > len(buf)-4 {
		return 0, nil, 0, false
	}
	rec := buf[4 : 4+n]
	body, sum := rec[:n-4], binary.LittleEndian.Uint32(rec[n-4:])
	count := int(binary.LittleEndian.Uint32(body[8:]))
	if crc32.Checksum(body, castagnoli) != sum || len(body) != 12+8*count {
		return 0, nil, 0, false
	}
	ends = make([]int64, count)
	for i := range ends {
		ends[i] = int64(binary.LittleEndian.Uint64(body[12+8*i:]))
	}
	return int64(binary.LittleEndian.Uint64(body)), ends, 4 + n, true
}

// Close refuses new writes, waits for those already written to commit,
// rewrites the commit file with the last record alone, and closes every
// bucket log and the commit file. After a clean close, a bucket short of
// that record is corruption; after a crash it may be a round the crash cut
// short, and recovery falls back to the record before (pickCommit).
func (t *TableLog) Close() error {
	t.wmu.Lock()
	seq, werr := t.seq, t.err
	t.err = ErrClosed // a failed log stays failed: no repair after Close
	t.wmu.Unlock()
	var err error
	if werr == nil && seq > 0 { // seq 0: the file holds the one record open wrote
		if err = t.commit.wait(seq, t.commitRound); err == nil {
			err = t.rewriteCommitFile(seq, t.DurableEnds())
		}
	}
	if t.opts.Replicated && !errors.Is(werr, ErrClosed) {
		err = errors.Join(err, t.CheckpointHighWatermarks())
	}
	return errors.Join(err, t.closeAll())
}

func (t *TableLog) closeAll() error {
	var errs []error
	for _, l := range t.buckets {
		errs = append(errs, l.Close())
	}
	t.cmu.Lock()
	if t.cfile != nil {
		errs = append(errs, t.cfile.Close())
		t.cfile = nil
	}
	t.cmu.Unlock()
	return errors.Join(errs...)
}

// Remove closes the table's logs and deletes its directory.
func (t *TableLog) Remove() error {
	err := t.closeAll()
	if rerr := t.opts.FS.RemoveAll(t.dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}
