package columnarlog

import (
	"time"

	"github.com/lakestream/lakestream/internal/invariants"
)

// Retention bounds what a log keeps. A sealed segment is deleted when it lies
// wholly below Floor and is either older than MaxAge (by its newest batch) or
// not needed to stay under MaxBytes. The active segment is never deleted.
type Retention struct {
	MaxAge   time.Duration // 0: no age limit
	MaxBytes int64         // 0: no size limit
	// Floor is the offset below which data may go: the tiered offset of a
	// table tiered into the lake. Segments ending above it are kept whatever
	// their age. Use math.MaxInt64 for no floor.
	Floor int64
}

// ApplyRetention deletes the segments the policy lets go, oldest first, and
// returns how many it deleted. Readers positioned in a deleted segment keep
// reading it until they move on.
func (l *Log) ApplyRetention(p Retention) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	var total int64
	for _, s := range l.mu.segments {
		total += s.size
	}
	now := l.opts.Now().UnixMicro()
	deleted := 0
	for len(l.mu.segments) > 1 {
		s := l.mu.segments[0]
		tooOld := p.MaxAge > 0 && now-s.maxTS > p.MaxAge.Microseconds()
		tooBig := p.MaxBytes > 0 && total > p.MaxBytes
		if s.next > p.Floor || (!tooOld && !tooBig) {
			break
		}
		// Invariant: retention deletes only sealed segments, wholly below
		// its floor.
		if invariants.Enabled && (!s.sealed || s.next > p.Floor) {
			invariants.Failf("retention stays below its floor", "%s: deleting [%d,%d) (sealed %t), floor %d",
				l.dir, s.base, s.next, s.sealed, p.Floor)
		}
		l.mu.segments = l.mu.segments[1:]
		l.mu.start = l.mu.segments[0].base
		total -= s.size
		if err := l.removeSegmentLocked(s); err != nil {
			return deleted, err
		}
		deleted++
		l.opts.Logger.Info("deleted log segment", "dir", l.dir, "base", s.base, "next", s.next)
	}
	l.checkSegmentsLocked()
	return deleted, nil
}

// Stats describes a log at one moment.
type Stats struct {
	// Committed is what readers see; Durable, what is durable (above
	// Committed only in a replicated log, up to its high watermark).
	Start, Committed, Durable, Next int64
	Segments                        int
	Bytes                           int64
}

// Stats returns the log's offsets and size.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Stats{Start: l.mu.start, Committed: l.committed.Load(), Durable: l.durable.Load(), Next: l.mu.next, Segments: len(l.mu.segments)}
	for _, s := range l.mu.segments {
		st.Bytes += s.size
	}
	return st
}
