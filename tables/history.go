package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/columnarlog"
)

// History serves a table's rows that its log no longer holds: the offsets
// below each bucket's retained start, which retention deleted once they
// were tiered. Each TableLake is one; a subscription that starts there reads the history first and continues in
// the log with no gap and no duplicate.
type History interface {
	// ReadHistory sends bucket's rows from offset from on, in offset
	// order, as records of the changelog columns cols (indexes into
	// ChangelogSchema; build them with Table.HistoryRecord), until the end
	// of the history as it was when the call started. It returns the
	// offset after the last row it sent: where the log continues.
	ReadHistory(ctx context.Context, bucket int, from int64, cols []int, out chan<- arrow.RecordBatch) (int64, error)
	// HistoryOffsetForTime returns the first offset of bucket in the
	// history committed at or after ts (unix microseconds), or the end of
	// the history if none is.
	HistoryOffsetForTime(ctx context.Context, bucket int, ts int64) (int64, error)
}

// Earliest returns bucket's first readable offset: 0 when a history
// covers what the log no longer holds, else the log's retained start.
func (t *Table) Earliest(bucket int) int64 {
	if t.Lake() != nil {
		return 0
	}
	return t.log.Bucket(bucket).Stats().Start
}

// OffsetForTime returns bucket's first offset committed at or after ts
// (unix microseconds), looking into the history when ts is older than
// the log's retained start.
func (t *Table) OffsetForTime(ctx context.Context, bucket int, ts int64) (int64, error) {
	l := t.log.Bucket(bucket)
	start := l.Stats().Start
	off, err := l.OffsetForTime(ts)
	if err != nil {
		return 0, err
	}
	off = max(off, start)
	h := t.Lake()
	if h == nil || off > start || start == 0 {
		return off, nil
	}
	// Every retained row is at or after ts: earlier ones may be too.
	hoff, err := h.HistoryOffsetForTime(ctx, bucket, ts)
	if err != nil {
		return 0, err
	}
	return min(hoff, off), nil
}

// followHistory reads from the history from offset from, for a follower
// whose log no longer holds it (err is the log's out-of-range error), and
// returns the offset where the log continues.
func (t *Table) followHistory(ctx context.Context, bucket int, from int64, cols []int, out chan<- arrow.RecordBatch, err error) (int64, error) {
	h := t.Lake()
	if h == nil || from >= t.log.Bucket(bucket).Stats().Start {
		return 0, err
	}
	next, herr := h.ReadHistory(ctx, bucket, from, cols, out)
	if herr != nil {
		return 0, herr
	}
	if next <= from {
		return 0, fmt.Errorf("follow %s bucket %d: offset %d is neither in the log nor in the lake: %w", t.Name(), bucket, from, err)
	}
	return next, nil
}

// HistoryRun is consecutive rows of a bucket's history committed together
// with one change type.
type HistoryRun struct {
	Rows   int64
	Commit int64 // unix microseconds
	Change columnarlog.ChangeType
}

// HistoryRecord builds the changelog record of rows of the history: rec
// holds them in the table's columns (all of them, as Schema), they are
// bucket's offsets from offset on, and runs say when and how they were
// committed, in order. cols index ChangelogSchema. The caller releases rec
// and the result.
func (t *Table) HistoryRecord(rec arrow.RecordBatch, cols []int, bucket int, offset int64, runs []HistoryRun) (arrow.RecordBatch, error) {
	schema := t.ChangelogSchema()
	n := int(rec.NumCols())
	if n != len(t.Def().Columns) {
		return nil, errors.New("history record: not the table's columns")
	}
	rows := int(rec.NumRows())
	pos := rowsAt{bucket: bucket, offset: offset, changes: make([]byte, 0, rows), commits: make([]int64, 0, rows)}
	for _, r := range runs {
		for i := int64(0); i < r.Rows; i++ {
			pos.changes = append(pos.changes, byte(r.Change))
			pos.commits = append(pos.commits, r.Commit)
		}
	}
	if len(pos.changes) != rows {
		return nil, fmt.Errorf("history record: %d rows, runs of %d", rows, len(pos.changes))
	}
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range cols {
		if c < 0 || c >= schema.NumFields() {
			return nil, fmt.Errorf("history record: column %d out of range", c)
		}
		fields[i] = schema.Field(c)
		if c < n {
			arrs[i] = rec.Column(c)
			arrs[i].Retain()
			continue
		}
		a, err := changelogColumn(c-n, pos, rows, t.mem)
		if err != nil {
			return nil, err
		}
		arrs[i] = a
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(rows)), nil
}
