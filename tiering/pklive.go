package tiering

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// errNotPKLake is the error of LiveRows on a log table's lake.
var errNotPKLake = errors.New("not a primary-key table's lake")

// LiveRows calls fn with the rows of bucket that are live in the lake's
// current snapshot — one per key live there, the key's current row as of
// the tiered offsets — in the table's columns (tables.Table.Schema), with
// the offset of each (its record in the log), and returns the bucket's
// tiered offset: a key index rebuilt from these rows continues with the
// log from there (docs/lake.md, "Primary-key tables"). Rows come file by
// file, in no particular offset order; fn must not keep rec past its call.
func (h lakeReader) LiveRows(ctx context.Context, bucket int, fn func(rec arrow.RecordBatch, offsets []int64) error) (int64, error) {
	st := h.lt.state.Load()
	if st.pk == nil {
		return 0, fmt.Errorf("live rows of %s: %w", h.lt.t.Name(), errNotPKLake)
	}
	if bucket < 0 || bucket >= len(st.offsets) {
		return 0, fmt.Errorf("live rows of %s: bucket %d out of range", h.lt.t.Name(), bucket)
	}
	pk := st.pk
	fs, err := st.tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	// The files holding the bucket's live rows, in the order first met.
	var paths []string
	seen := map[string]bool{}
	for _, r := range pk.runs[bucket] {
		if !seen[r.path] && pk.state.AnyLive(bucket, r.offset, r.end()) {
			seen[r.path] = true
			paths = append(paths, r.path)
		}
	}
	schema := h.lt.t.Schema()
	for _, p := range paths {
		f := pk.files[p]
		// offsetAt[i] is the offset of file row i if it is a live row of
		// the bucket, else -1.
		offsetAt := make([]int64, f.rows.rows())
		var row int64
		for _, r := range f.rows {
			for k := range r.rows {
				offsetAt[row+k] = -1
				if int(r.bucket) == bucket && isState(r.change) && pk.state.Live(bucket, r.offset+k) {
					offsetAt[row+k] = r.offset + k
				}
			}
			row += r.rows
		}
		if err := h.liveRowsOfFile(ctx, fs, p, offsetAt, schema, fn); err != nil {
			return 0, fmt.Errorf("live rows of %s bucket %d: %w", h.lt.t.Name(), bucket, err)
		}
	}
	return st.offsets[bucket], nil
}

// liveRowsOfFile reads the data file at path and calls fn with its rows
// whose offsetAt is not -1, a record batch of the file at a time.
func (h lakeReader) liveRowsOfFile(ctx context.Context, fs icebergio.IO, path string, offsetAt []int64, schema *arrow.Schema, fn func(rec arrow.RecordBatch, offsets []int64) error) error {
	pr, ar, err := openParquet(fs, path, h.s.cfg.Mem)
	if err != nil {
		return err
	}
	defer pr.Close()
	rr, err := ar.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("read lake file %s: %w", path, err)
	}
	defer rr.Release()
	var at int64
	for rr.Next() {
		rec, err := conformLakeRecord(rr.RecordBatch(), schema, h.s.cfg.Mem)
		if err != nil {
			return fmt.Errorf("read lake file %s: %w", path, err)
		}
		err = h.sendLive(rec, offsetAt[at:min(at+rec.NumRows(), int64(len(offsetAt)))], schema, fn)
		at += rec.NumRows()
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("read lake file %s: %w", path, err)
	}
	if at != int64(len(offsetAt)) {
		return fmt.Errorf("lake file %s: read %d rows, its row map has %d", path, at, len(offsetAt))
	}
	return nil
}

// sendLive calls fn with the rows of rec whose offsets are not -1.
func (h lakeReader) sendLive(rec arrow.RecordBatch, offsets []int64, schema *arrow.Schema, fn func(rec arrow.RecordBatch, offsets []int64) error) error {
	if int64(len(offsets)) != rec.NumRows() {
		return fmt.Errorf("lake file: more rows than its row map")
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	var offs []int64
	for i := 0; i < len(offsets); {
		if offsets[i] < 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(offsets) && offsets[j] >= 0 {
			j++
		}
		parts = append(parts, rec.NewSlice(int64(i), int64(j)))
		offs = append(offs, offsets[i:j]...)
		i = j
	}
	if len(parts) == 0 {
		return nil
	}
	out, err := concatRecords(schema, parts, h.s)
	if err != nil {
		return err
	}
	defer out.Release()
	return fn(out, offs)
}
