package bucket

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// gather builds the rows idx of col, in order, for the column types that make
// up most tables: fixed-width values, booleans, and string and binary with 32
// or 64-bit offsets. It returns false for any other type, which Split then
// hands to compute Take.
//
// Why not Take for all: Take grows its string output row by row and pays a
// kernel dispatch per call; gather sizes every buffer once from the index
// list. The measurement is in Split's comment. Scattering rows to all buckets
// in one pass per column, instead of one gather per bucket, was within 10-25%
// on an int64 column, not worth a second code shape.
func gather(col arrow.Array, idx []int32, mem memory.Allocator) (arrow.Array, bool) {
	dt := col.DataType()
	if col.Len() == 0 || !hasBuffers(col) {
		return nil, false
	}
	var bufs []*memory.Buffer
	switch dt.ID() {
	case arrow.INT8, arrow.UINT8:
		bufs = []*memory.Buffer{nil, gatherFixed[uint8](col, idx, mem)}
	case arrow.INT16, arrow.UINT16, arrow.FLOAT16:
		bufs = []*memory.Buffer{nil, gatherFixed[uint16](col, idx, mem)}
	case arrow.INT32, arrow.UINT32, arrow.FLOAT32, arrow.DATE32, arrow.TIME32, arrow.DECIMAL32:
		bufs = []*memory.Buffer{nil, gatherFixed[uint32](col, idx, mem)}
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64, arrow.DATE64, arrow.TIME64,
		arrow.TIMESTAMP, arrow.DURATION, arrow.DECIMAL64:
		bufs = []*memory.Buffer{nil, gatherFixed[uint64](col, idx, mem)}
	case arrow.DECIMAL128:
		bufs = []*memory.Buffer{nil, gatherFixed[[16]byte](col, idx, mem)}
	case arrow.DECIMAL256:
		bufs = []*memory.Buffer{nil, gatherFixed[[32]byte](col, idx, mem)}
	case arrow.BOOL:
		bufs = []*memory.Buffer{nil, gatherBits(col.Data().Buffers()[1].Bytes(), col.Data().Offset(), idx, mem)}
	case arrow.STRING, arrow.BINARY:
		off, data := gatherVar(col.(offsets32).ValueOffsets(), rawValues(col), idx, mem)
		bufs = []*memory.Buffer{nil, off, data}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		off, data := gatherVar(col.(offsets64).ValueOffsets(), rawValues(col), idx, mem)
		bufs = []*memory.Buffer{nil, off, data}
	default:
		return nil, false
	}
	nulls := 0
	if col.NullN() > 0 {
		bufs[0] = gatherBits(col.NullBitmapBytes(), col.Data().Offset(), idx, mem)
		nulls = len(idx) - bitutil.CountSetBits(bufs[0].Bytes(), 0, len(idx))
	}
	data := array.NewData(dt, len(idx), bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release() // data holds its own references
		}
	}
	defer data.Release()
	return array.MakeFromData(data), true
}

// hasBuffers reports whether col's value buffers are all present, as the
// loops below assume; arrays built by hand may leave one nil.
func hasBuffers(col arrow.Array) bool {
	bufs := col.Data().Buffers()
	for _, b := range bufs[1:] {
		if b == nil {
			return false
		}
	}
	return len(bufs) > 1
}

// newBuffer allocates size bytes from mem.
func newBuffer(mem memory.Allocator, size int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(size)
	return b
}

// asSlice views b as a []T. Arrow buffers are 64-byte aligned, so any T fits.
func asSlice[T any](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

// gatherFixed copies the values idx of a fixed-width column whose values are
// as wide as T. Values under nulls are copied too, harmlessly.
func gatherFixed[T any](col arrow.Array, idx []int32, mem memory.Allocator) *memory.Buffer {
	var zero T
	out := newBuffer(mem, len(idx)*int(unsafe.Sizeof(zero)))
	src := asSlice[T](col.Data().Buffers()[1].Bytes())[col.Data().Offset():]
	dst := asSlice[T](out.Bytes())
	for k, i := range idx {
		dst[k] = src[i]
	}
	return out
}

// gatherBits copies the bits idx (counted from off) of a bitmap.
func gatherBits(src []byte, off int, idx []int32, mem memory.Allocator) *memory.Buffer {
	out := newBuffer(mem, int(bitutil.BytesForBits(int64(len(idx)))))
	dst := out.Bytes()
	memory.Set(dst, 0)
	for k, i := range idx {
		if bitutil.BitIsSet(src, off+int(i)) {
			bitutil.SetBit(dst, k)
		}
	}
	return out
}

// gatherVar copies the values idx of a string or binary column: one pass to
// size the data buffer, one to fill it and the offsets.
func gatherVar[O int32 | int64](offs []O, data []byte, idx []int32, mem memory.Allocator) (offsets, values *memory.Buffer) {
	var total O
	for _, i := range idx {
		total += offs[i+1] - offs[i]
	}
	var zero O
	offsets = newBuffer(mem, (len(idx)+1)*int(unsafe.Sizeof(zero)))
	values = newBuffer(mem, int(total))
	dstOff := asSlice[O](offsets.Bytes())
	dst := values.Bytes()
	var at O
	for k, i := range idx {
		dstOff[k] = at
		at += O(copy(dst[at:], data[offs[i]:offs[i+1]]))
	}
	dstOff[len(idx)] = at
	return offsets, values
}
