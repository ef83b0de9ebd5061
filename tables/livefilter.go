package tables

import (
	"context"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A state read keeps the live rows of each batch it reads (filterLive).
// Arrow's filter kernel takes a boolean array and, for strings, goes
// through its generic take machinery: in the pk workload's GROUP BY it
// was most of the scan's CPU (docs/benchmarks.md, "Primary-key tables").
// The live rows are a bitmap already, so the columns of the types a
// table's rows mostly have (fixed-width values, strings and binaries) are
// filtered here straight from its words; other types go through Arrow's
// kernel.

// keepBits are the rows of a batch to keep: bit i of word i/64 for row i.
type keepBits []uint64

func (k keepBits) count() int {
	n := 0
	for _, w := range k {
		n += bits.OnesCount64(w)
	}
	return n
}

// each calls fn with each kept row, in order.
func (k keepBits) each(fn func(i int)) {
	for wi, w := range k {
		for w != 0 {
			fn(wi*64 + bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
}

// filterRecord returns the kept rows of rec (kept of them, at least one);
// keep has no bit at or past rec's rows.
func filterRecord(ctx context.Context, rec arrow.RecordBatch, keep keepBits, kept int, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		out, err := filterColumn(ctx, c, keep, kept, mem)
		if err != nil {
			return nil, err
		}
		cols[i] = out
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(kept)), nil
}

// filterColumn returns the kept rows of a.
func filterColumn(ctx context.Context, a arrow.Array, keep keepBits, kept int, mem memory.Allocator) (arrow.Array, error) {
	d := a.Data()
	switch dt := a.DataType().(type) {
	case *arrow.StringType, *arrow.BinaryType:
		return filterBinary(d, keep, kept, mem), nil
	case *arrow.BooleanType:
		// Also: arrow-go v18's filter kernel misreads a sliced boolean
		// column with nulls (TestFilterRecord found it).
		return filterBool(d, keep, kept, mem), nil
	case *arrow.DictionaryType: // its indexes are fixed-width, its values not
	case arrow.FixedWidthDataType:
		if w := dt.BitWidth(); w >= 8 && w%8 == 0 && len(d.Buffers()) == 2 {
			return filterFixed(d, w/8, keep, kept, mem), nil
		}
	}
	mask := keepMask(keep, a.Len(), mem)
	defer mask.Release()
	// The record kernel, not FilterArray: arrow-go's array kernel has no
	// case for MAP columns ("array_filter has no kernel"); the record's
	// takes every nested type.
	one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: a.DataType(), Nullable: true}}, nil), []arrow.Array{a}, int64(a.Len()))
	defer one.Release()
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), one, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, err
	}
	defer out.Release()
	col := out.Column(0)
	col.Retain()
	return col, nil
}

// keepMask is keep as a boolean array of n rows, for Arrow's kernel (rows
// past keep's words are not kept).
func keepMask(keep keepBits, n int, mem memory.Allocator) arrow.Array {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := range n {
		b.UnsafeAppend(i/64 < len(keep) && keep[i/64]&(1<<(i%64)) != 0)
	}
	return b.NewArray()
}

// filterValidity returns the validity bitmap of the kept rows of d and
// their null count; nil when d has no nulls.
func filterValidity(d arrow.ArrayData, keep keepBits, kept int, mem memory.Allocator) (*memory.Buffer, int) {
	if d.NullN() == 0 || d.Buffers()[0] == nil {
		return nil, 0
	}
	in, off := d.Buffers()[0].Bytes(), d.Offset()
	out := memory.NewResizableBuffer(mem)
	out.Resize(int(bitutil.BytesForBits(int64(kept))))
	ob := out.Bytes()
	clear(ob)
	j, nulls := 0, 0
	keep.each(func(i int) {
		if bitutil.BitIsSet(in, off+i) {
			bitutil.SetBit(ob, j)
		} else {
			nulls++
		}
		j++
	})
	return out, nulls
}

// filterFixed filters values of width bytes each.
func filterFixed(d arrow.ArrayData, width int, keep keepBits, kept int, mem memory.Allocator) arrow.Array {
	valid, nulls := filterValidity(d, keep, kept, mem)
	out := memory.NewResizableBuffer(mem)
	out.Resize(kept * width)
	ob := out.Bytes()
	in := d.Buffers()[1].Bytes()[d.Offset()*width:]
	j := 0
	switch width {
	case 8:
		iv, ov := arrow.Uint64Traits.CastFromBytes(in), arrow.Uint64Traits.CastFromBytes(ob)
		keep.each(func(i int) { ov[j] = iv[i]; j++ })
	case 4:
		iv, ov := arrow.Uint32Traits.CastFromBytes(in), arrow.Uint32Traits.CastFromBytes(ob)
		keep.each(func(i int) { ov[j] = iv[i]; j++ })
	default:
		keep.each(func(i int) { copy(ob[j*width:(j+1)*width], in[i*width:(i+1)*width]); j++ })
	}
	nd := array.NewData(d.DataType(), kept, []*memory.Buffer{valid, out}, nil, nulls, 0)
	defer nd.Release()
	releaseBuffers(valid, out)
	return array.MakeFromData(nd)
}

// filterBool filters a boolean column.
func filterBool(d arrow.ArrayData, keep keepBits, kept int, mem memory.Allocator) arrow.Array {
	valid, nulls := filterValidity(d, keep, kept, mem)
	out := memory.NewResizableBuffer(mem)
	out.Resize(int(bitutil.BytesForBits(int64(kept))))
	ob := out.Bytes()
	clear(ob)
	in, off := d.Buffers()[1].Bytes(), d.Offset()
	j := 0
	keep.each(func(i int) {
		if bitutil.BitIsSet(in, off+i) {
			bitutil.SetBit(ob, j)
		}
		j++
	})
	nd := array.NewData(d.DataType(), kept, []*memory.Buffer{valid, out}, nil, nulls, 0)
	defer nd.Release()
	releaseBuffers(valid, out)
	return array.MakeFromData(nd)
}

// filterBinary filters a string or binary column (32-bit offsets).
func filterBinary(d arrow.ArrayData, keep keepBits, kept int, mem memory.Allocator) arrow.Array {
	valid, nulls := filterValidity(d, keep, kept, mem)
	offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
	var in []byte
	if b := d.Buffers()[2]; b != nil {
		in = b.Bytes()
	}
	size := 0
	keep.each(func(i int) { size += int(offs[i+1] - offs[i]) })
	ob := memory.NewResizableBuffer(mem)
	ob.Resize((kept + 1) * 4)
	oo := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	data := memory.NewResizableBuffer(mem)
	data.Resize(size)
	db := data.Bytes()
	j, pos := 0, int32(0)
	oo[0] = 0
	keep.each(func(i int) {
		pos += int32(copy(db[pos:], in[offs[i]:offs[i+1]]))
		j++
		oo[j] = pos
	})
	nd := array.NewData(d.DataType(), kept, []*memory.Buffer{valid, ob, data}, nil, nulls, 0)
	defer nd.Release()
	releaseBuffers(valid, ob, data)
	return array.MakeFromData(nd)
}

func releaseBuffers(bufs ...*memory.Buffer) {
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
}
