package tables

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
)

// pkView returns the state reads of the table see now; nil for a log
// table, and for a primary-key table whose key index awaits its rebuild
// from the lake (pendingErr).
func (t *Table) pkView() *pkState {
	if t.pk == nil {
		return nil
	}
	return t.pk.state.Load()
}

// readLive sends the live rows of r under state st, decoded by dec (the
// table's columns dec.cols): a batch with no live record is skipped
// without being decoded, the others are filtered by the live set. send
// does not own the record it is given. Should retention have deleted
// records of r before the read got to them (rounds tiered them, with a
// lake), those are read from the lake's history and filtered by st the
// same way, as often as it happens (readRange): the read stays one state.
// With the column cache and no pruning, the live rows of whole batches
// come from the cache when st has the same live bits for them as when
// they were cached (pk_livecache.go).
func (t *Table) readLive(ctx context.Context, r Range, st *pkState, dec *decoder, prune *pruner, send func(arrow.RecordBatch) error) error {
	r.To = min(r.To, st.ends[r.Bucket])
	if dec.cache != nil && prune == nil {
		return t.readLiveCached(ctx, r, st, dec, send)
	}
	return t.readLiveLog(ctx, r, st, dec, prune, send)
}

// readLiveLog is readLive from the log (and the lake's history). With the
// column cache, it records the batches' bounds and caches the live rows of
// whole batches, as readLiveCached reads them.
func (t *Table) readLiveLog(ctx context.Context, r Range, st *pkState, dec *decoder, prune *pruner, send func(arrow.RecordBatch) error) error {
	live := st.live[r.Bucket]
	var start int64 // the log's retained start, below which the directory drops bounds
	if dec.cache != nil {
		start = t.log.Bucket(r.Bucket).Stats().Start
	}
	each := func(b columnarlog.Batch) error {
		whole := b.BaseOffset() >= r.From && b.NextOffset() <= r.To
		if dec.cache != nil && whole {
			t.pk.dirs[r.Bucket].add(batchSpan{b.BaseOffset(), b.NextOffset()}, start)
		}
		from, to := max(b.BaseOffset(), r.From), min(b.NextOffset(), r.To)
		if !live.anyIn(from, to) {
			return nil
		}
		if prune != nil {
			if ok, err := prune.mayMatch(b, r.Bucket); err != nil || !ok {
				return err
			}
		}
		if dec.cache != nil && whole && prune == nil {
			return sendWholeLive(ctx, b, live, dec, t, send)
		}
		rec, err := dec.decode(b)
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
	}
	// The history's records carry _offset after cols (changelog.go).
	hcols := append(slices.Clip(dec.cols), len(t.Def().Columns)+2)
	return t.readRange(ctx, r, hcols, func(rec arrow.RecordBatch) error {
		return t.sendLiveHistory(ctx, rec, live, send)
	}, each)
}

// sendWholeLive sends the live rows of the whole batch b: from the cache of
// live rows when it has them for live's bits, else decoded (through the
// column cache), filtered and cached.
func sendWholeLive(ctx context.Context, b columnarlog.Batch, live *liveSet, dec *decoder, t *Table, send func(arrow.RecordBatch) error) error {
	keep, kept := live.bits(b.BaseOffset(), b.NextOffset(), nil)
	if rec := dec.cachedLive(b.BaseOffset(), keep, kept); rec != nil {
		defer rec.Release()
		return send(rec)
	}
	rec, err := dec.decode(b)
	if err != nil {
		return err
	}
	defer rec.Release()
	out := rec
	if kept < int(rec.NumRows()) {
		if out, err = filterRecord(ctx, rec, keep, kept, t.mem); err != nil {
			return err
		}
		defer out.Release()
	}
	dec.putLive(b.BaseOffset(), b.SchemaID(), keep, out)
	return send(out)
}

// sendLiveHistory sends the live rows of rec, history rows whose last
// column is their offset, without that column.
func (t *Table) sendLiveHistory(ctx context.Context, rec arrow.RecordBatch, live *liveSet, send func(arrow.RecordBatch) error) error {
	n := int(rec.NumCols()) - 1
	offs := rec.Column(n).(*array.Int64)
	if offs.Len() == 0 {
		return nil
	}
	fields := rec.Schema().Fields()[:n]
	proj := array.NewRecordBatch(arrow.NewSchema(fields, nil), rec.Columns()[:n], rec.NumRows())
	defer proj.Release()
	base := offs.Value(0)
	for i := 1; i < offs.Len(); i++ {
		if offs.Value(i) != base+int64(i) {
			return fmt.Errorf("read %s from the lake: history offsets not consecutive", t.Name())
		}
	}
	out, err := filterLive(compute.WithAllocator(ctx, t.mem), proj, base, base, base+int64(offs.Len()), live, t.mem)
	if err != nil || out == nil {
		return err
	}
	defer out.Release()
	return send(out)
}

// filterLive keeps the rows of rec (the records of a batch at base) whose
// offsets in [from, to) are live; nil when none is.
func filterLive(ctx context.Context, rec arrow.RecordBatch, base, from, to int64, live *liveSet, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	from, to = max(from, base), min(to, base+n)
	keep, kept := live.bits(from, to, nil)
	if kept == 0 {
		return nil, nil
	}
	if kept == int(n) {
		rec.Retain()
		return rec, nil
	}
	if from > base { // keep is relative to from: shift it to the batch's rows
		keep = shiftKeep(keep, int(from-base), int(n))
	}
	return filterRecord(ctx, rec, keep, kept, mem)
}

// shiftKeep returns keep moved by by rows, for a batch of n rows.
func shiftKeep(keep keepBits, by, n int) keepBits {
	out := make(keepBits, (n+63)/64)
	keep.each(func(i int) {
		j := i + by
		out[j/64] |= 1 << (j % 64)
	})
	return out
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
	var live int64
	if st := t.pk.state.Load(); st != nil { // nil: awaiting its rebuild from the lake
		live = st.Live()
	}
	return KeyIndexStats{LiveKeys: live, DiskBytes: t.pk.idx.DiskBytes()}
}
