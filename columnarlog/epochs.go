package columnarlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path"
	"slices"
	"sort"

	"github.com/lakestream/lakestream/internal/invariants"
	"github.com/lakestream/lakestream/internal/vfs"
)

// ErrFencedEpoch is returned for a leader epoch older than one the log
// already holds: a leader that lost its lead, or a batch of an older leader.
var ErrFencedEpoch = errors.New("fenced by a newer leader epoch")

// EpochEntry is one entry of a bucket's leader-epoch history: the leader of
// Epoch wrote the batches from offset Start up to the Start of the next
// entry (or to the log's end).
type EpochEntry struct {
	Epoch int32
	Start int64
}

// The leader-epoch history of a replicated bucket, <bucket>/leader-epochs:
//
//	leader epoch int32 | count uint32 | count × (epoch int32 | start offset int64)
//	| CRC-32C uint32 of the bytes before it
//
// The leader epoch is the one Append stamps (LeaderEpoch): the last
// BecomeLeader's, kept so that a follower, which holds a newer leader's
// batches, still refuses to Append after a restart. Entries are in order,
// epochs and start offsets strictly increasing. The
// file is replaced whole (a temporary file, fsync, rename, directory fsync)
// whenever the history changes: a new epoch (BecomeLeader, an append or a
// replicated batch of a new epoch) or a truncation. Every batch carries its
// leader epoch, so the history is a cache of the batch headers, like the
// indexes: a missing or damaged file, or one that disagrees with the
// batches of the active segment, is rebuilt from the headers on open.
//
// The last entry may have no batch: a leader that has not appended yet,
// or a crash between writing the history and the batches of a new epoch.
// Entries below the log's start, which retention deleted, are kept.
const (
	epochsFileName  = "leader-epochs"
	epochEntrySize  = 12
	epochsFileExtra = 12 // leader epoch, count and CRC
)

func encodeEpochs(leader int32, entries []EpochEntry) []byte {
	buf := make([]byte, 0, epochsFileExtra+epochEntrySize*len(entries))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(leader))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(entries)))
	for _, e := range entries {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(e.Epoch))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(e.Start))
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// decodeEpochs parses a history file into the leader epoch and the
// entries; an error wraps ErrCorrupt.
func decodeEpochs(buf []byte) (int32, []EpochEntry, error) {
	if len(buf) < epochsFileExtra {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(buf))
	}
	body, sum := buf[:len(buf)-4], binary.LittleEndian.Uint32(buf[len(buf)-4:])
	leader := int32(binary.LittleEndian.Uint32(body))
	n := int64(binary.LittleEndian.Uint32(body[4:]))
	if crc32.Checksum(body, castagnoli) != sum || int64(len(body)) != 8+n*epochEntrySize {
		return 0, nil, fmt.Errorf("%w: checksum or length mismatch", ErrCorrupt)
	}
	out := make([]EpochEntry, n)
	for i := range out {
		e := body[8+i*epochEntrySize:]
		out[i] = EpochEntry{Epoch: int32(binary.LittleEndian.Uint32(e)), Start: int64(binary.LittleEndian.Uint64(e[4:]))}
		if out[i].Start < 0 || i > 0 && (out[i].Epoch <= out[i-1].Epoch || out[i].Start <= out[i-1].Start) {
			return 0, nil, fmt.Errorf("%w: entry %d %+v out of order", ErrCorrupt, i, out[i])
		}
	}
	return leader, out, nil
}

// writeEpochs replaces the history file of the log in dir, durably.
func writeEpochs(fs vfs.FS, dir string, leader int32, entries []EpochEntry) error {
	if err := replaceFile(fs, dir, epochsFileName, encodeEpochs(leader, entries)); err != nil {
		return fmt.Errorf("write leader epochs: %w", err)
	}
	return nil
}

// withEpoch returns the history with epoch starting at start appended. A
// last entry starting at start held no batch, and is replaced.
func withEpoch(entries []EpochEntry, epoch int32, start int64) []EpochEntry {
	out := slices.Clone(entries)
	if n := len(out); n > 0 && out[n-1].Start >= start {
		out = out[:n-1]
	}
	return append(out, EpochEntry{Epoch: epoch, Start: start})
}

// cutEpochs drops the entries starting above offset to, and with inclusive
// the one starting at to too, and says whether it dropped any.
func cutEpochs(entries []EpochEntry, to int64, inclusive bool) ([]EpochEntry, bool) {
	i := sort.Search(len(entries), func(i int) bool {
		return entries[i].Start > to || inclusive && entries[i].Start == to
	})
	return entries[:i:i], i < len(entries)
}

// lastEpochLocked is the epoch of the history's last entry, MinInt32 when
// it has none.
func (l *Log) lastEpochLocked() int32 {
	if n := len(l.mu.epochs); n > 0 {
		return l.mu.epochs[n-1].Epoch
	}
	return math.MinInt32
}

// noteEpochLocked records in the history of a replicated log that epoch
// starts at offset start, unless it is already the last entry's. Callers
// check that epoch is not below it. The history is written before the
// batches of the epoch, so that a batch is never ahead of its entry.
func (l *Log) noteEpochLocked(epoch int32, start int64) error {
	if !l.opts.Replicated || l.lastEpochLocked() == epoch {
		return nil
	}
	// Invariant: leader epochs never decrease within a log.
	if invariants.Enabled && epoch < l.lastEpochLocked() {
		invariants.Failf("leader epochs never decrease", "%s: epoch %d at %d after %d", l.dir, epoch, start, l.lastEpochLocked())
	}
	entries := withEpoch(l.mu.epochs, epoch, start)
	if err := writeEpochs(l.opts.FS, l.dir, l.mu.epoch, entries); err != nil {
		return err
	}
	l.mu.epochs = entries
	return nil
}

// cutEpochsLocked drops the history entries that start above offset to, or
// at it with inclusive, and rewrites the file when it drops any.
func (l *Log) cutEpochsLocked(to int64, inclusive bool) error {
	entries, cut := cutEpochs(l.mu.epochs, to, inclusive)
	if !cut {
		return nil
	}
	l.mu.epochs = entries
	return writeEpochs(l.opts.FS, l.dir, l.mu.epoch, entries)
}

// BecomeLeader makes epoch the leader epoch that appended batches carry
// and records in the epoch history that it starts at the log's end. An
// epoch equal to the current one changes nothing; an older one, or one
// older than the batches the log holds, is ErrFencedEpoch. The history is
// durable on return. Only a replicated log (Options.Replicated) has one.
func (l *Log) BecomeLeader(epoch int32) error {
	if !l.opts.Replicated {
		return fmt.Errorf("become leader of epoch %d: the log is not replicated", epoch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if last := max(l.mu.epoch, l.lastEpochLocked()); epoch < last {
		return fmt.Errorf("become leader of epoch %d: the log has epoch %d: %w", epoch, last, ErrFencedEpoch)
	}
	if epoch == l.mu.epoch && epoch == l.lastEpochLocked() {
		return nil
	}
	entries := l.mu.epochs
	if epoch > l.lastEpochLocked() {
		entries = withEpoch(entries, epoch, l.mu.next)
	}
	if err := writeEpochs(l.opts.FS, l.dir, epoch, entries); err != nil {
		return fmt.Errorf("become leader of epoch %d: %w", epoch, err)
	}
	l.mu.epochs, l.mu.epoch = entries, epoch
	return nil
}

// LeaderEpoch is the leader epoch Append stamps: Options.LeaderEpoch, or
// the last BecomeLeader's (kept across restarts by the history file). A log
// that holds batches of a newer epoch (a follower's) refuses to Append
// until BecomeLeader gives it one at least as new.
func (l *Log) LeaderEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epoch
}

// EpochHistory returns a copy of the leader-epoch history, oldest first; nil
// for a log that is not replicated.
func (l *Log) EpochHistory() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.mu.epochs)
}

// EndForEpoch answers Kafka's OffsetsForLeaderEpoch: the largest epoch of
// the history at or below epoch, and the offset where it ends (the start of
// the next entry, or the log's durable end for the last one); (-1, -1) when
// the history has no epoch at or below epoch. A follower finds where it
// diverges from the leader with the answers (Divergence).
func (l *Log) EndForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.mu.epochs
	i := sort.Search(len(h), func(i int) bool { return h[i].Epoch > epoch }) - 1
	switch {
	case i < 0:
		return -1, -1
	case i+1 < len(h):
		return h[i].Epoch, h[i+1].Start
	}
	return h[i].Epoch, max(l.durable.Load(), h[i].Start)
}

// loadEpochsLocked reads the history of a replicated log as it opens, once
// recovery has cut the bucket to its committed end: entries that start
// past the end go (their batches were never committed), and a file that is
// missing, damaged or disagrees with the active segment's batches is
// rebuilt from the batch headers of every segment.
func (l *Log) loadEpochsLocked() error {
	name := path.Join(l.dir, epochsFileName)
	buf, err := readFile(l.opts.FS, name)
	var entries []EpochEntry
	leader := l.opts.LeaderEpoch
	why := ""
	switch {
	case errors.Is(err, os.ErrNotExist):
		why = "missing"
	case err != nil:
		return err
	default:
		if leader, entries, err = decodeEpochs(buf); err != nil {
			leader, why = l.opts.LeaderEpoch, err.Error()
		}
	}
	cut := false
	if why == "" {
		entries, cut = cutEpochs(entries, l.mu.next, false)
		if err := l.checkActiveEpochsLocked(entries); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		if entries, err = l.epochsFromHeadersLocked(); err != nil {
			return fmt.Errorf("rebuild leader epochs: %w", err)
		}
		if l.mu.next > l.mu.start {
			l.opts.Logger.Info("rebuilt leader-epoch history", "dir", l.dir, "entries", len(entries), "history", why)
		}
	}
	if why != "" || cut {
		if err := writeEpochs(l.opts.FS, l.dir, leader, entries); err != nil {
			return err
		}
	}
	// A rebuilt history has lost the epoch the log led: it takes
	// Options.LeaderEpoch, so a follower's log does not take up a leader's
	// epoch, and a leader calls BecomeLeader again.
	l.mu.epochs, l.mu.epoch = entries, leader
	return nil
}

// checkActiveEpochsLocked compares the history with the epochs of the
// active segment's batches. The sealed segments are not read: the history
// is written before the batches of a new epoch, so only a cut (Truncate,
// recovery) can leave it behind the batches, and a cut leaves the batches
// it did not finish cutting at the log's end.
func (l *Log) checkActiveEpochsLocked(entries []EpochEntry) error {
	s := l.mu.segments[len(l.mu.segments)-1]
	runs, err := l.segmentEpochs(s, nil)
	if err != nil {
		return err
	}
	if want := epochsWithin(entries, s.base, l.mu.next); !slices.Equal(runs, want) {
		return fmt.Errorf("the active segment's batches have epochs %v, the history %v", runs, want)
	}
	return nil
}

// epochsFromHeadersLocked derives the history from the batch headers.
func (l *Log) epochsFromHeadersLocked() ([]EpochEntry, error) {
	var runs []EpochEntry
	for _, s := range l.mu.segments {
		var err error
		if runs, err = l.segmentEpochs(s, runs); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// segmentEpochs reads the batch headers of segment s up to its end and
// appends to runs an entry for each batch whose epoch is above the last
// entry's. (Epochs never decrease in a replicated log; one that does, in a
// log written before it was replicated, continues the entry before it.)
func (l *Log) segmentEpochs(s *segment, runs []EpochEntry) ([]EpochEntry, error) {
	var buf [HeaderSize]byte
	pos, next := int64(0), s.base
	for next < s.next {
		b, bad, err := s.readHeader(&buf, pos)
		if err != nil {
			return nil, err
		}
		if bad == nil && b.BaseOffset() != next {
			bad = fmt.Errorf("%w: base offset %d, want %d", ErrCorrupt, b.BaseOffset(), next)
		}
		if bad != nil {
			return nil, s.corrupt(pos, next, bad)
		}
		if n := len(runs); n == 0 || b.LeaderEpoch() > runs[n-1].Epoch {
			runs = append(runs, EpochEntry{Epoch: b.LeaderEpoch(), Start: next})
		}
		pos += int64(b.Size())
		next = b.NextOffset()
	}
	return runs, nil
}

// epochsWithin returns the entries of the history that cover offsets in
// [from, to), the first one starting at from.
func epochsWithin(entries []EpochEntry, from, to int64) []EpochEntry {
	var out []EpochEntry
	for i, e := range entries {
		end := int64(math.MaxInt64)
		if i+1 < len(entries) {
			end = entries[i+1].Start
		}
		if end <= from || e.Start >= to {
			continue
		}
		out = append(out, EpochEntry{Epoch: e.Epoch, Start: max(e.Start, from)})
	}
	return out
}

// Divergence returns the offset a follower's log must be truncated to
// before it fetches from a new leader: the end of the longest prefix its
// batches share with the leader's, as their epoch histories tell it.
// endForEpoch asks the leader for its EndForEpoch.
//
// It asks for the follower's last epoch e. When the leader answers with
// that epoch, both logs hold its batches, written by the one leader of
// that epoch, up to the lesser of their ends for it. When the leader
// answers with an older epoch, the follower's batches of the epochs
// between are not the leader's: it asks again for its own largest epoch at
// or below the answer, until the two agree on an epoch (the histories
// strictly shrink, so this ends). When the leader has no epoch at or below
// one the follower asks for, none of the follower's batches from its first
// epoch on are the leader's: the answer is the start of its first epoch,
// but never below the follower's committed offset.
func (l *Log) Divergence(endForEpoch func(epoch int32) (int32, int64, error)) (int64, error) {
	h := l.EpochHistory()
	if len(h) == 0 {
		return l.Durable(), nil
	}
	floor := max(h[0].Start, l.Committed())
	e := h[len(h)-1].Epoch
	for {
		el, endL, err := endForEpoch(e)
		if err != nil {
			return 0, err
		}
		if el < 0 {
			return floor, nil
		}
		ef, endF := l.EndForEpoch(el)
		switch {
		case ef == el:
			return max(min(endL, endF), l.Committed()), nil
		case ef < 0:
			return floor, nil
		}
		e = ef
	}
}
