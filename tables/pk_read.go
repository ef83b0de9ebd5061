package tables

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
)

// pkView returns the state reads of the table see now; nil for a log
// table.
func (t *Table) pkView() *pkState {
	if t.pk == nil {
		return nil
	}
	return t.pk.state.Load()
}

// pkRanges are the log ranges a read of state covers: each bucket from
// its retained start (retention keeps every live record, retention.go) to
// the end the state covers.
func (t *Table) pkRanges(st *pkState) []Range {
	var out []Range
	for b, end := range st.ends {
		from := t.log.Bucket(b).Stats().Start
		if end > from {
			out = append(out, Range{Bucket: b, From: from, To: end})
		}
	}
	return out
}

// readLive sends the live rows of r under state st, decoded as the
// columns cols of the table: a batch with no live record is skipped
// without being decoded, the others are filtered by the live set. send
// does not own the record it is given.
func (t *Table) readLive(ctx context.Context, r Range, st *pkState, prune *pruner, decode func(columnarlog.Batch) (arrow.RecordBatch, error), send func(arrow.RecordBatch) error) error {
	live := st.live[r.Bucket]
	r.To = min(r.To, st.ends[r.Bucket])
	return t.ReadBatches(ctx, r, func(b columnarlog.Batch) error {
		from, to := max(b.BaseOffset(), r.From), min(b.NextOffset(), r.To)
		if !live.anyIn(from, to) {
			return nil
		}
		if prune != nil {
			if ok, err := prune.mayMatch(b, r.Bucket); err != nil || !ok {
				return err
			}
		}
		rec, err := decode(b)
		if err != nil {
			return err
		}
		defer rec.Release()
		out, err := filterLive(compute.WithAllocator(ctx, t.mem), rec, b.BaseOffset(), from, to, live, t.mem)
		if err != nil || out == nil {
			return err
		}
		defer out.Release()
		return send(out)
	})
}

// filterLive keeps the rows of rec (the records of a batch at base) whose
// offsets in [from, to) are live; nil when none is.
func filterLive(ctx context.Context, rec arrow.RecordBatch, base, from, to int64, live *liveSet, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	bb := array.NewBooleanBuilder(mem)
	defer bb.Release()
	bb.Reserve(n)
	kept := 0
	for i := 0; i < n; i++ {
		off := base + int64(i)
		ok := off >= from && off < to && live.has(off)
		if ok {
			kept++
		}
		bb.UnsafeAppend(ok)
	}
	if kept == 0 {
		return nil, nil
	}
	if kept == n {
		rec.Retain()
		return rec, nil
	}
	m := bb.NewArray()
	defer m.Release()
	return compute.FilterRecordBatch(ctx, rec, m, compute.DefaultFilterOptions())
}

// nonEmpty lists the buckets that have rows.
func nonEmpty(refs [][]rowRef) []int {
	var out []int
	for b, r := range refs {
		if len(r) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// KeyIndexStats describe a primary-key table's key index.
type KeyIndexStats struct {
	LiveKeys  int64 // keys with a row
	DiskBytes int64 // of the index's files
}

// KeyIndexStats returns the key index's figures; zero for a log table.
func (t *Table) KeyIndexStats() KeyIndexStats {
	if t.pk == nil {
		return KeyIndexStats{}
	}
	return KeyIndexStats{LiveKeys: t.pk.state.Load().Live(), DiskBytes: t.pk.idx.DiskBytes()}
}
