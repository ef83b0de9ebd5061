package tiering

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/tables"
)

// Which rows of a lake data file a read keeps (docs/lake.md, "Reads"):
//
//   - a read of a primary-key table ("t") keeps the rows whose change
//     records are live in the state it captured: their (bucket, offset)
//     come from the file's row map, whatever the Iceberg deletes say;
//   - every other read ("t$lake", a log table's "t", and a file without a
//     row map in a primary-key table's read) keeps the rows the snapshot's
//     position deletes do not delete.
//
// The file is read (or taken from the read cache) whole, without its
// deletes, so that a row's place in what is read is its position in the
// file, and the cache holds one decoding of the file for every snapshot
// and state; the mask is applied after.

// rowKeep marks the rows of a data file a read keeps.
type rowKeep struct {
	bits []uint64
	rows int64
	kept int64
}

func newRowKeep(rows int64, all bool) *rowKeep {
	k := &rowKeep{bits: make([]uint64, (rows+63)/64), rows: rows}
	if all {
		for i := range k.bits {
			k.bits[i] = ^uint64(0)
		}
		if r := rows % 64; r != 0 {
			k.bits[len(k.bits)-1] = 1<<r - 1
		}
		k.kept = rows
	}
	return k
}

func (k *rowKeep) has(row int64) bool { return k.bits[row/64]&(1<<(row%64)) != 0 }

func (k *rowKeep) set(row int64) {
	if !k.has(row) {
		k.bits[row/64] |= 1 << (row % 64)
		k.kept++
	}
}

func (k *rowKeep) clear(row int64) {
	if k.has(row) {
		k.bits[row/64] &^= 1 << (row % 64)
		k.kept--
	}
}

// count is the rows kept in [from, to).
func (k *rowKeep) count(from, to int64) int64 {
	var n int64
	for r := from; r < to; {
		if r%64 == 0 && to-r >= 64 {
			n += int64(bits.OnesCount64(k.bits[r/64]))
			r += 64
			continue
		}
		if k.has(r) {
			n++
		}
		r++
	}
	return n
}

// keepLive marks the rows of a file with row map m that live keeps. A run
// with no live record is passed over without looking at its offsets.
func keepLive(m rowMap, live tables.LiveRows) *rowKeep {
	k := newRowKeep(m.rows(), false)
	var row int64
	for _, r := range m {
		b := int(r.bucket)
		if live.AnyLive(b, r.offset, r.end()) {
			for i := int64(0); i < r.rows; i++ {
				if live.Live(b, r.offset+i) {
					k.set(row + i)
				}
			}
		}
		row += r.rows
	}
	return k
}

// filter returns the rows of rec, the file's rows from row first on, that
// k keeps: rec itself (retained) when all are, nil when none is.
func (k *rowKeep) filter(ctx context.Context, rec arrow.RecordBatch, first int64, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	kept := k.count(first, first+n)
	switch kept {
	case 0:
		return nil, nil
	case n:
		rec.Retain()
		return rec, nil
	}
	bb := array.NewBooleanBuilder(mem)
	defer bb.Release()
	bb.Reserve(int(n))
	for i := int64(0); i < n; i++ {
		bb.UnsafeAppend(k.has(first + i))
	}
	m := bb.NewArray()
	defer m.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, m, compute.DefaultFilterOptions())
}

// posDeletes reads the position delete files of one planned read, each
// once: the positions each deletes, by data file path.
type posDeletes struct {
	fs  icebergio.IO
	mem memory.Allocator
	mu  sync.Mutex
	m   map[string]map[string][]int64 // delete file → data file → positions
}

// keepUndeleted marks the rows of a data file of rows rows at path that
// the delete files dels do not delete.
func (d *posDeletes) keepUndeleted(ctx context.Context, path string, rows int64, dels []iceberg.DataFile) (*rowKeep, error) {
	k := newRowKeep(rows, true)
	for _, df := range dels {
		if df.ContentType() != iceberg.EntryContentPosDeletes {
			continue
		}
		pos, err := d.read(ctx, df.FilePath())
		if err != nil {
			return nil, err
		}
		for _, p := range pos[path] {
			if p >= 0 && p < rows {
				k.clear(p)
			}
		}
	}
	return k, nil
}

func (d *posDeletes) read(ctx context.Context, path string) (map[string][]int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.m[path]; ok {
		return m, nil
	}
	m, err := readPosDeletes(ctx, d.fs, path, d.mem)
	if err != nil {
		return nil, err
	}
	if d.m == nil {
		d.m = map[string]map[string][]int64{}
	}
	d.m[path] = m
	return m, nil
}

// readPosDeletes reads an Iceberg position delete file (Parquet: file_path
// string, pos long; docs/lake.md): the positions it deletes, by data file.
func readPosDeletes(ctx context.Context, fs icebergio.IO, path string, mem memory.Allocator) (map[string][]int64, error) {
	pr, ar, err := openParquet(fs, path, mem)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	tbl, err := ar.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", path, err)
	}
	defer tbl.Release()
	fc, pc := tbl.Schema().FieldIndices("file_path"), tbl.Schema().FieldIndices("pos")
	if len(fc) != 1 || len(pc) != 1 {
		return nil, fmt.Errorf("position delete file %s: no file_path and pos columns (%s)", path, tbl.Schema())
	}
	out := map[string][]int64{}
	files, poss := tbl.Column(fc[0]).Data().Chunks(), tbl.Column(pc[0]).Data().Chunks()
	if len(files) != len(poss) {
		return nil, fmt.Errorf("position delete file %s: columns chunked apart", path)
	}
	for i := range files {
		pos, ok := poss[i].(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("position delete file %s: pos is %s, want int64", path, poss[i].DataType())
		}
		name, err := stringValues(files[i])
		if err != nil {
			return nil, fmt.Errorf("position delete file %s: file_path: %w", path, err)
		}
		for j := 0; j < pos.Len(); j++ {
			if pos.IsValid(j) {
				f := name(j)
				out[f] = append(out[f], pos.Value(j))
			}
		}
	}
	for f, p := range out {
		slices.Sort(p)
		out[f] = p
	}
	return out, nil
}

// stringValues reads the values of a string column.
func stringValues(a arrow.Array) (func(int) string, error) {
	switch c := a.(type) {
	case *array.String:
		return c.Value, nil
	case *array.LargeString:
		return c.Value, nil
	case *array.Binary:
		return func(i int) string { return string(c.Value(i)) }, nil
	case *array.Dictionary:
		vals, err := stringValues(c.Dictionary())
		if err != nil {
			return nil, err
		}
		return func(i int) string { return vals(c.GetValueIndex(i)) }, nil
	}
	return nil, fmt.Errorf("type %s, want a string", a.DataType())
}

// sparse reports whether some row group of the file idx describes has no
// row keep keeps: reading the kept row groups alone skips it undecoded.
func (k *rowKeep) sparse(idx *lakeFileIndex) bool {
	n := len(idx.rgStart) - 1
	if n < 2 || idx.rgStart[n] != k.rows {
		return false
	}
	for rg := 0; rg < n; rg++ {
		if k.count(idx.rgStart[rg], idx.rgStart[rg+1]) == 0 {
			return true
		}
	}
	return false
}

// streamRowGroups reads the row groups of the file idx describes that hold
// a kept row, the part's columns only, and sends their kept rows.
func (p *lakePart) streamRowGroups(ctx context.Context, idx *lakeFileIndex, keep *rowKeep, send func(arrow.RecordBatch) bool) error {
	pr, ar, err := openParquet(p.fs, idx.path, p.s.cfg.Mem)
	if err != nil {
		return err
	}
	defer pr.Close()
	var leaves []int
	for _, sf := range ar.Manifest.Fields {
		if scan.FieldIndex(p.out, sf.Field.Name) >= 0 {
			leaves = appendLeaves(leaves, sf)
		}
	}
	for rg := 0; rg < len(idx.rgStart)-1; rg++ {
		row := idx.rgStart[rg]
		if keep.count(row, idx.rgStart[rg+1]) == 0 {
			continue
		}
		rr, err := ar.GetRecordReader(ctx, leaves, []int{rg})
		if err != nil {
			return err
		}
		for rr.Next() {
			out, err := conformLakeRecord(rr.RecordBatch(), p.out, p.s.cfg.Mem)
			if err != nil {
				rr.Release()
				return err
			}
			n := out.NumRows()
			more, err := p.sendKept(ctx, out, row, keep, send)
			if err != nil || !more {
				rr.Release()
				return err
			}
			row += n
		}
		err = rr.Err()
		rr.Release()
		if err != nil {
			return err
		}
		if row != idx.rgStart[rg+1] {
			return fmt.Errorf("row group %d: read %d rows, the footer says %d", rg, row-idx.rgStart[rg], idx.rgRows(rg))
		}
	}
	return nil
}

func appendLeaves(dst []int, sf pqarrow.SchemaField) []int {
	if sf.IsLeaf() {
		return append(dst, sf.ColIndex)
	}
	for _, c := range sf.Children {
		dst = appendLeaves(dst, c)
	}
	return dst
}
