package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
)

// ChangelogSchema is the schema of the table's changelog: its columns
// followed by _change_type, _bucket, _offset and _commit_timestamp.
func (t *Table) ChangelogSchema() *arrow.Schema { return changelogSchema(t.Def().ArrowSchema()) }

// Follow streams bucket's rows from offset from on (from the table's
// history first when the log no longer holds from), with the changelog
// columns cols (indexes into ChangelogSchema), sending each decoded record
// to out as soon as it is committed. It never ends on its own: it waits for
// new commits (no polling) until ctx ends or the table is closed. out is
// the only buffer: a slow receiver slows this reader, never the writers;
// should retention delete the log ahead of it meanwhile (rounds tiered
// it), it goes on in the history from where it got to.
func (t *Table) Follow(ctx context.Context, bucket int, from int64, cols []int, out chan<- arrow.RecordBatch) error {
	if bucket < 0 || bucket >= t.log.Buckets() {
		return fmt.Errorf("follow %s: bucket %d out of range", t.Name(), bucket)
	}
	l := t.log.Bucket(bucket)
	p, err := t.plan(t.Def(), scan.Request{Columns: cols}, true, nil)
	if err != nil {
		return err
	}
	part := &logPart{plan: p, r: Range{Bucket: bucket}}
	decode := part.decoder()
	rd, from, err := t.followOpen(ctx, bucket, from, cols, out)
	if err != nil {
		return err
	}
	defer func() {
		if rd != nil { // nil: closed, and no other opened
			rd.Close()
		}
	}()
	var buf []byte
	for {
		wake := l.Notify()
		batches, nbuf, err := rd.Next(buf[:0], 1<<20)
		if errors.Is(err, columnarlog.ErrOffsetOutOfRange) {
			rd.Close()
			if rd, from, err = t.followOpen(ctx, bucket, from, cols, out); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		buf = nbuf
		for _, b := range batches {
			if err := sendFrom(ctx, b, from, decode, out); err != nil {
				return err
			}
			from = max(from, b.NextOffset())
		}
		if len(batches) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-l.Done():
			return fmt.Errorf("follow %s: table closed", t.Name())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// followOpen opens a reader of bucket's log from offset from, sending the
// history first when the log no longer holds from, and returns it with the
// offset it reads from.
func (t *Table) followOpen(ctx context.Context, bucket int, from int64, cols []int, out chan<- arrow.RecordBatch) (*columnarlog.Reader, int64, error) {
	l := t.log.Bucket(bucket)
	rd, err := l.NewReader(from)
	for errors.Is(err, columnarlog.ErrOffsetOutOfRange) {
		// Below the retained log: the history first, then the log from
		// where the history ended (retention may have moved on meanwhile,
		// then the history again).
		if from, err = t.followHistory(ctx, bucket, from, cols, out, err); err != nil {
			break
		}
		rd, err = l.NewReader(from)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("follow %s bucket %d: %w", t.Name(), bucket, err)
	}
	return rd, from, nil
}

// sendFrom decodes b and sends its rows at or after offset from.
func sendFrom(ctx context.Context, b columnarlog.Batch, from int64, decode func(columnarlog.Batch) (arrow.RecordBatch, error), out chan<- arrow.RecordBatch) error {
	if b.NextOffset() <= from {
		return nil
	}
	rec, err := decode(b)
	if err != nil {
		return err
	}
	if skip := from - b.BaseOffset(); skip > 0 {
		cut := rec.NewSlice(skip, rec.NumRows())
		rec.Release()
		rec = cut
	}
	select {
	case out <- rec:
		return nil
	case <-ctx.Done():
		rec.Release()
		return ctx.Err()
	}
}
