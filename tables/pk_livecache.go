package tables

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A state read of a primary-key table reads the whole changelog — three
// records a key after one update each — to send the live one. A query
// repeated over a state that did not change (a dashboard's GROUP BY over a
// quiet table) would read the log's bytes, take the columns from the
// column cache and filter them again every time: in the pk workload's
// aggregate that was about half of the node's CPU (docs/benchmarks.md,
// "Primary-key tables"). So a state read keeps, beside the decoded
// columns, each whole batch's live rows as it filtered them, with the live
// bits they were filtered by: a later read whose state has the same bits
// for that batch sends them as they are. And it keeps each bucket's batch
// bounds (a batchDir), so such a read walks the cached batches without
// reading the log; it reads the log only for the runs of batches whose
// live rows are not cached or changed, and from where the directory ends.
//
// Batches and their offsets never change, so a bound never goes stale;
// live rows are checked against the bits of the reader's own state, so
// they cannot be stale either. Writes that change the live bits of a
// batch (an update clears its key's older record) make the next read
// filter that batch again, from the column cache.

// batchSpan is the offsets [base, next) of one stored batch.
type batchSpan struct{ base, next int64 }

// batchDir is the bounds of one bucket's batches that state reads saw.
type batchDir struct {
	mu    sync.Mutex
	spans []batchSpan // sorted, disjoint
}

// add records a batch's bounds, dropping those that end at or below
// start (the log's retained start).
func (d *batchDir) add(s batchSpan, start int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].next > start }); n > 0 {
		d.spans = slices.Delete(d.spans, 0, n)
	}
	i := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].base >= s.base })
	if i < len(d.spans) && d.spans[i].base == s.base {
		return
	}
	d.spans = slices.Insert(d.spans, i, s)
}

// run returns the known batches from the one holding off, each starting
// where the one before ends, up to to; none when no known batch holds off.
func (d *batchDir) run(off, to int64) []batchSpan {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].next > off })
	if i == len(d.spans) || d.spans[i].base > off {
		return nil
	}
	j := i + 1
	for j < len(d.spans) && d.spans[j].base < to && d.spans[j].base == d.spans[j-1].next {
		j++
	}
	return slices.Clone(d.spans[i:j])
}

// liveKey is the cache key of the live rows of column col of the batch at
// base: negative columns tell them from the decoded columns.
func (d *decoder) liveKey(col int, base int64) cacheKey {
	return cacheKey{table: d.def.ID, bucket: int32(d.bucket), col: int32(-2 - col), offset: base}
}

// cachedLive returns the live rows of the batch at base, whose live bits
// are keep, when the cache has them for those bits; nil otherwise.
func (d *decoder) cachedLive(base int64, keep keepBits, kept int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(d.cols))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range d.cols {
		if cols[i] = d.cache.getLive(d.liveKey(c, base), keep); cols[i] == nil {
			return nil
		}
	}
	cur := d.def.ArrowSchema()
	fields := make([]arrow.Field, len(d.cols))
	for i, c := range d.cols {
		fields[i] = cur.Field(c)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(kept))
}

// putLive caches rec, the live rows of the batch at base whose live bits
// are keep (which the cache then owns), but for columns the batch's schema
// lacks (nulls, not worth keeping).
func (d *decoder) putLive(base int64, schemaID int32, keep keepBits, rec arrow.RecordBatch) {
	batchCols := 0
	if s, err := d.def.ArrowSchemaAt(schemaID); err == nil {
		batchCols = s.NumFields()
	}
	for i, c := range d.cols {
		if c < batchCols {
			d.cache.putLive(d.liveKey(c, base), keep, rec.Column(i))
		}
	}
}

// readLiveCached is readLive through the cache of live rows: the runs of
// batches the directory knows and whose live rows are cached for st are
// sent from the cache, the others read from the log (readLiveLog, which
// fills the cache and the directory).
func (t *Table) readLiveCached(ctx context.Context, r Range, st *pkState, dec *decoder, send func(arrow.RecordBatch) error) error {
	live := st.live[r.Bucket]
	dir := &t.pk.dirs[r.Bucket]
	var keep keepBits
	for pos := r.From; pos < r.To; {
		if err := ctx.Err(); err != nil {
			return err
		}
		spans := dir.run(pos, r.To)
		i := 0
		for ; i < len(spans); i++ {
			s := spans[i]
			if s.base < r.From || s.next > r.To {
				break // part of a batch: readLiveLog cuts it
			}
			var kept int
			keep, kept = live.bits(s.base, s.next, keep)
			if kept > 0 {
				rec := dec.cachedLive(s.base, keep, kept)
				if rec == nil {
					break
				}
				err := send(rec)
				rec.Release()
				if err != nil {
					return err
				}
			}
			pos = s.next
		}
		if pos >= r.To {
			return nil
		}
		// A miss at pos: read the log up to the next batch the cache
		// serves (or to the end: the directory may not know the rest).
		end := r.To
		for i++; i < len(spans) && spans[i].next <= r.To; i++ {
			if dec.servable(spans[i], live) {
				end = spans[i].base
				break
			}
		}
		if err := t.readLiveLog(ctx, Range{Bucket: r.Bucket, From: pos, To: end}, st, dec, nil, send); err != nil {
			return err
		}
		pos = end
	}
	return nil
}

// servable reports whether the cache serves batch s under live.
func (d *decoder) servable(s batchSpan, live *liveSet) bool {
	keep, kept := live.bits(s.base, s.next, nil)
	if kept == 0 {
		return true
	}
	rec := d.cachedLive(s.base, keep, kept)
	if rec == nil {
		return false
	}
	rec.Release()
	return true
}
