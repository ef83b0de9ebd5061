package tiering

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/tables"
)

// A committer of a shared lake that holds no in-sync replica of a bucket
// of a log table reads the bucket from a node that does
// (docs/cluster.md#tiering-in-a-cluster): its changelog, whose _offset,
// _change_type and _commit_timestamp columns give each row's log position
// as a batch's header gives it to a local read. The serving node reads up
// to its own high watermark, so every row read is acknowledged; the
// round's end offset of the bucket is the one after the last row read,
// and the rows must continue the lake's offset without a gap (a serving
// node whose retained log starts above it fails the round). The commit's
// snapshot assertion fences the round as it fences a local one.

// remoteBuckets is, for a table of a shared lake, which of its buckets
// this node reads from other nodes; nil when it reads them all here.
func (s *Service) remoteBuckets(ctx context.Context, t *tables.Table) ([]bool, error) {
	if s.cfg.Leases == nil {
		// One node, or a lake of this node's own: it tiers its own replicas.
		return nil, nil
	}
	bs, err := t.RemoteBuckets(ctx)
	if err != nil || len(bs) == 0 {
		return nil, err
	}
	out := make([]bool, t.Log().Buckets())
	for _, b := range bs {
		if b >= 0 && b < len(out) {
			out[b] = true
		}
	}
	return out, nil
}

// writeRemote writes bucket b's offsets from `from` on, up to limit (or
// past it to the end of the batch that holds limit-1, as the serving node
// sends whole batches) or the serving node's high watermark, read from
// another node, to w; it returns the offset after the last row written.
func (s *Service) writeRemote(ctx context.Context, t *tables.Table, w *lakeWriter, b int, from, limit int64, rows *int64) (int64, error) {
	n := len(t.Def().Columns)
	// The table's columns, then _change_type, _offset, _commit_timestamp.
	cols := make([]int, 0, n+3)
	for c := range n {
		cols = append(cols, c)
	}
	cols = append(cols, n, n+2, n+3)
	next := from
	err := t.ReadRemoteBucket(ctx, tables.LayerChangelog, b, from, limit, cols, func(rec arrow.RecordBatch) error {
		offs, ok1 := rec.Column(n + 1).(*array.Int64)
		changes, ok2 := rec.Column(n).(*array.String)
		commits, ok3 := rec.Column(n + 2).(*array.Timestamp)
		if !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("bucket %d read from another node: not the changelog columns", b)
		}
		rows64 := rec.NumRows()
		i := int64(0)
		for i < rows64 && offs.Value(int(i)) < next {
			i++ // rows below the lake's offset: the batch that holds it began below
		}
		if i == rows64 {
			return nil
		}
		var m rowMap
		for j := i; j < rows64; j++ {
			o := offs.Value(int(j))
			if o != next+(j-i) {
				return fmt.Errorf("bucket %d read from another node: offset %d where %d was due: the serving replica does not hold the rows in between", b, o, next+(j-i))
			}
			ct, ok := tables.ParseChangeType(changes.Value(int(j)))
			if !ok {
				return fmt.Errorf("bucket %d read from another node: unknown change type %q", b, changes.Value(int(j)))
			}
			m = m.add(run{bucket: int32(b), offset: o, rows: 1, commit: int64(commits.Value(int(j))), change: uint8(ct)})
		}
		user := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:n], nil), rec.Columns()[:n], rows64)
		defer user.Release()
		part := user
		if i > 0 {
			part = user.NewSlice(i, rows64)
			defer part.Release()
		}
		lake, err := conformLakeRecord(part, w.schema, s.cfg.Mem)
		if err != nil {
			return err
		}
		defer lake.Release()
		if err := w.write(lake, m, b); err != nil {
			return err
		}
		next += rows64 - i
		*rows += rows64 - i
		return nil
	})
	return next, err
}
