package tables

import (
	"context"
	"fmt"

	"github.com/lakestream/lakestream/columnarlog"
)

// Start is where a subscription starts reading each bucket.
type Start struct {
	At StartAt
	// Time is StartTime's instant, in unix microseconds.
	Time int64
	// Offsets are StartOffsets' positions of the buckets listed; the
	// others start at the earliest offset.
	Offsets map[int]int64
}

// StartAt is the kind of a Start.
type StartAt int

const (
	// StartEarliest is each bucket's first readable offset.
	StartEarliest StartAt = iota
	// StartLatest is each bucket's committed end: only rows committed
	// afterwards are read.
	StartLatest
	// StartTime is each bucket's first offset committed at or after Time.
	StartTime
	// StartOffsets is the offsets listed.
	StartOffsets
)

// StartOffsets resolves a start, now, to each bucket's first offset. The
// first readable offset is 0 when the table's lake holds what retention
// deleted from the log (Follow reads it from there), else the log's
// retained start. An offset outside [first readable, committed end] is an
// error wrapping columnarlog.ErrOffsetOutOfRange.
func (t *Table) StartOffsets(ctx context.Context, s Start) ([]int64, error) {
	n := t.log.Buckets()
	for b := range s.Offsets {
		if b < 0 || b >= n {
			return nil, fmt.Errorf("bucket %d does not exist (%s has %d): %w", b, t.Name(), n, columnarlog.ErrOffsetOutOfRange)
		}
	}
	ends := t.log.CommittedEnds()
	out := make([]int64, n)
	for b := range out {
		earliest := t.Earliest(b)
		from := earliest
		switch s.At {
		case StartTime:
			off, err := t.OffsetForTime(ctx, b, s.Time)
			if err != nil {
				return nil, err
			}
			from = max(off, earliest)
		case StartLatest:
			from = ends[b]
		case StartOffsets:
			if off, ok := s.Offsets[b]; ok {
				from = off
			}
		}
		if from < earliest || from > ends[b] {
			return nil, fmt.Errorf("bucket %d offset %d: %s holds [%d, %d) (the log [%d, %d)): %w",
				b, from, t.Name(), earliest, ends[b], t.log.Bucket(b).Stats().Start, ends[b], columnarlog.ErrOffsetOutOfRange)
		}
		out[b] = from
	}
	return out, nil
}
