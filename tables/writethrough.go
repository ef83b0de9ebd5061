package tables

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
)

// Write-through: a write of a log table holds its rows decoded before it
// compresses them, so once the write is acknowledged its columns go into
// the read cache under the offsets the log gave its batches — the key a
// read of those batches looks up (read.go). The first query after an
// ingest, and every subscriber following the table, then read the fresh
// rows as a repeated read does, without decompressing them.
//
// Only acknowledged writes feed the cache: a batch is then committed (in a
// replicated table, below the high watermark), so its offsets are never
// given to other rows and the entry never goes stale. A primary-key table's
// reads are of its live rows, cached per state (pk_livecache.go), and are
// not fed here.

// freshRecords are a write's records by bucket, in the order of that
// bucket's batches: freshRecords[b][i] is what parts[b][i] encodes.
type freshRecords [][]freshRecord

type freshRecord struct {
	rec arrow.RecordBatch
	// split: rec is a part bucket.Split made, whose columns are already
	// the table allocator's, each with buffers of its own; they are cached
	// as they are.
	split bool
}

func (f freshRecords) release() {
	for _, recs := range f {
		for _, r := range recs {
			r.rec.Release()
		}
	}
}

// cacheWritten puts the columns of an acknowledged write's records into the
// read cache under the base offsets res gives their batches. The columns of a
// record that was not split by bucket are copied first, compacted into memory
// of the table's allocator: a record may share the buffers of the message it
// was received in (conform keeps a record that already fits), which the
// receive path may reuse, and a column sharing one body with its siblings
// would keep all of them alive after its siblings were evicted, beyond the
// bytes the cache counts. A split part's columns are copies of that kind
// already (bucket.Split), and are not copied again.
//
// The write is stored whatever happens here: a column that is not put (the
// copy failed, or it is larger than the cache takes) is decoded by its
// first read, as without write-through.
func (t *Table) cacheWritten(def *catalog.Table, fresh freshRecords, res [][]columnarlog.AppendResult) {
	if t.cache == nil || fresh == nil || len(fresh) != len(res) {
		return
	}
	for b, recs := range fresh {
		if len(recs) != len(res[b]) {
			continue
		}
		for i, fr := range recs {
			if res[b][i].Duplicate { // stored before, under the original's offset
				continue
			}
			key := cacheKey{table: def.ID, bucket: int32(b), offset: res[b][i].BaseOffset}
			for c, col := range fr.rec.Columns() {
				key.col = int32(c)
				if fr.split {
					t.cache.put(key, col)
					continue
				}
				if int64(col.Data().SizeInBytes()) > t.cache.max/4 {
					continue // put would refuse it: not worth the copy
				}
				own, err := array.Concatenate([]arrow.Array{col}, t.mem)
				if err != nil {
					continue
				}
				t.cache.put(key, own)
				own.Release()
			}
		}
	}
}
