package duck

/*
#include "cabi.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Arrow → DuckDB vectors: the scan side of the table function.
//
// A colWriter copies rows [src, src+n) of an Arrow array into rows
// [dst, dst+n) of a DuckDB vector. Writers are built once per scan from the
// column's Arrow type and read the Arrow buffers directly:
//   - fixed-width types whose bytes are DuckDB's bytes (integers, floats,
//     date32, time64[us], timestamp[us], decimal128 with p > 18) are one
//     memmove into the vector's data;
//   - strings and binaries are one cgo call per column that loops in C:
//     values of up to 12 bytes are written inline into DuckDB's string_t,
//     longer ones go through duckdb_unsafe_vector_assign_string_element_len,
//     which copies them into the vector's heap (the C API cannot reference
//     Arrow's buffer); utf8 values are validated on the way;
//   - bool, narrow decimals and non-microsecond timestamps are a Go loop;
//   - list, map and struct recurse into their children (the "slower path":
//     one extra cgo call per child and batch, no per-value work beyond the
//     list entries).
//
// No per-value interface boxing and no per-value cgo call anywhere.
type colWriter func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error

// newColWriter returns the writer for a column of Arrow type t, which must
// be a type logicalType accepts.
func newColWriter(t arrow.DataType) (colWriter, error) {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return writeBool, nil
	case *arrow.Int8Type, *arrow.Uint8Type:
		return fixedWriter(1), nil
	case *arrow.Int16Type, *arrow.Uint16Type:
		return fixedWriter(2), nil
	case *arrow.Int32Type, *arrow.Uint32Type, *arrow.Float32Type, *arrow.Date32Type:
		return fixedWriter(4), nil
	case *arrow.Int64Type, *arrow.Uint64Type, *arrow.Float64Type:
		return fixedWriter(8), nil
	case *arrow.Time64Type:
		if t.Unit == arrow.Microsecond {
			return fixedWriter(8), nil
		}
	case *arrow.TimestampType:
		if t.Unit == arrow.Microsecond {
			return fixedWriter(8), nil
		}
		return timestampWriter(t.Unit), nil
	case *arrow.Decimal128Type:
		return decimalWriter(t.Precision), nil
	case *arrow.StringType:
		return stringWriter(true, false), nil
	case *arrow.BinaryType:
		return stringWriter(false, false), nil
	case *arrow.LargeStringType:
		return stringWriter(true, true), nil
	case *arrow.LargeBinaryType:
		return stringWriter(false, true), nil
	case *arrow.ListType:
		return nestedListWriter(t.Elem(), false)
	case *arrow.LargeListType:
		return nestedListWriter(t.Elem(), true)
	case *arrow.MapType:
		// DuckDB's MAP is physically LIST(STRUCT(key, value)), Arrow's map
		// is physically list<struct<key, value>>: the same shape.
		return nestedListWriter(t.Elem(), false)
	case *arrow.StructType:
		children := make([]colWriter, t.NumFields())
		for i, f := range t.Fields() {
			w, err := newColWriter(f.Type)
			if err != nil {
				return nil, err
			}
			children[i] = w
		}
		return structWriter(children), nil
	}
	return nil, fmt.Errorf("unsupported type %s", t)
}

// vectorBytes returns the first size bytes of a vector's data.
func vectorBytes(vec bindings.Vector, size int) []byte {
	return unsafe.Slice((*byte)(bindings.VectorGetData(vec)), size)
}

func fixedWriter(width int) colWriter {
	return func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
		d := arr.Data()
		start := (d.Offset() + src) * width
		in := d.Buffers()[1].Bytes()[start : start+n*width]
		copy(vectorBytes(vec, (dst+n)*width)[dst*width:], in)
		writeValidity(vec, dst, arr, src, n)
		return nil
	}
}

func writeBool(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
	d := arr.Data()
	bits := d.Buffers()[1].Bytes()
	out := vectorBytes(vec, dst+n)[dst:]
	off := d.Offset() + src
	for i := range out {
		if bitutil.BitIsSet(bits, off+i) {
			out[i] = 1
		} else {
			out[i] = 0
		}
	}
	writeValidity(vec, dst, arr, src, n)
	return nil
}

// timestampWriter converts seconds, milliseconds or nanoseconds to DuckDB's
// microseconds.
func timestampWriter(unit arrow.TimeUnit) colWriter {
	return func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
		in := arr.(*array.Timestamp).TimestampValues()[src : src+n]
		out := unsafe.Slice((*int64)(bindings.VectorGetData(vec)), dst+n)[dst:]
		switch unit {
		case arrow.Second:
			for i, v := range in {
				out[i] = int64(v) * 1_000_000
			}
		case arrow.Millisecond:
			for i, v := range in {
				out[i] = int64(v) * 1_000
			}
		case arrow.Nanosecond:
			for i, v := range in {
				out[i] = int64(v) / 1_000
			}
		}
		writeValidity(vec, dst, arr, src, n)
		return nil
	}
}

// decimalWriter writes decimal128 values. DuckDB stores DECIMAL(p,s) as
// int16 (p ≤ 4), int32 (p ≤ 9), int64 (p ≤ 18) or hugeint; hugeint's
// layout (lower uint64, upper int64) is Arrow's decimal128 layout.
func decimalWriter(precision int32) colWriter {
	if precision > 18 {
		return fixedWriter(16)
	}
	return func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
		in := arr.(*array.Decimal128).Values()[src : src+n]
		data := bindings.VectorGetData(vec)
		switch {
		case precision <= 4:
			out := unsafe.Slice((*int16)(data), dst+n)[dst:]
			for i, v := range in {
				out[i] = int16(v.LowBits())
			}
		case precision <= 9:
			out := unsafe.Slice((*int32)(data), dst+n)[dst:]
			for i, v := range in {
				out[i] = int32(v.LowBits())
			}
		default:
			out := unsafe.Slice((*int64)(data), dst+n)[dst:]
			for i, v := range in {
				out[i] = int64(v.LowBits())
			}
		}
		writeValidity(vec, dst, arr, src, n)
		return nil
	}
}

// emptyData stands in for the value buffer of an array of empty strings, so
// that C never gets a nil base pointer.
var emptyData = C.CString("")

func stringData(d arrow.ArrayData) *C.char {
	if b := d.Buffers()[2]; b != nil && b.Len() > 0 {
		return (*C.char)(unsafe.Pointer(unsafe.SliceData(b.Bytes())))
	}
	return emptyData
}

// stringWriter writes utf8/binary (large: large_utf8/large_binary)
// columns; utf8 columns are checked to be valid UTF-8, which DuckDB
// requires of VARCHAR. An invalid value fails the scan rather than becoming
// NULL, as duckdb_vector_assign_string_element_len would make it: a silent
// change of data is worse than a loud error.
func stringWriter(utf8, large bool) colWriter {
	return func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
		d := arr.Data()
		raw := d.Buffers()[1].Bytes()
		out, base := bindings.VectorGetData(vec), d.Offset()+src
		var validity *C.uint8_t
		if bm := d.Buffers()[0]; bm != nil && arr.NullN() > 0 {
			validity = (*C.uint8_t)(unsafe.SliceData(bm.Bytes()))
		}
		var bad C.int64_t
		if large {
			offsets := arrow.Int64Traits.CastFromBytes(raw)[base : base+n+1] // C reads n+1 offsets
			bad = C.ls_assign_strings64(vec.Ptr, out, C.uint64_t(dst), (*C.int64_t)(unsafe.Pointer(&offsets[0])),
				stringData(d), C.uint64_t(n), validity, C.uint64_t(base), C.bool(utf8))
		} else {
			offsets := arrow.Int32Traits.CastFromBytes(raw)[base : base+n+1]
			bad = C.ls_assign_strings32(vec.Ptr, out, C.uint64_t(dst), (*C.int32_t)(unsafe.Pointer(&offsets[0])),
				stringData(d), C.uint64_t(n), validity, C.uint64_t(base), C.bool(utf8))
		}
		if bad >= 0 {
			return fmt.Errorf("row %d: invalid UTF-8 in a string column", src+int(bad))
		}
		writeValidity(vec, dst, arr, src, n)
		return nil
	}
}

// listEntry is DuckDB's duckdb_list_entry.
type listEntry struct{ offset, length uint64 }

func nestedListWriter(elem arrow.DataType, large bool) (colWriter, error) {
	child, err := newColWriter(elem)
	if err != nil {
		return nil, err
	}
	return func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
		d := arr.Data()
		var at func(i int) int
		if large {
			offs := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset()+src : d.Offset()+src+n+1]
			at = func(i int) int { return int(offs[i]) }
		} else {
			offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset()+src : d.Offset()+src+n+1]
			at = func(i int) int { return int(offs[i]) }
		}
		first, last := at(0), at(n)
		base := int(bindings.ListVectorGetSize(vec))
		total := base + last - first
		if bindings.ListVectorReserve(vec, bindings.IdxT(total)) == bindings.StateError {
			return fmt.Errorf("reserve list of %d values", total)
		}
		entries := unsafe.Slice((*listEntry)(bindings.VectorGetData(vec)), dst+n)[dst:]
		for i := range entries {
			entries[i] = listEntry{offset: uint64(base + at(i) - first), length: uint64(at(i+1) - at(i))}
		}
		// No elements (every list empty or NULL): the child array may
		// have no value buffer at all, and there is nothing to copy.
		if last > first {
			values := arr.(interface{ ListValues() arrow.Array }).ListValues()
			if err := child(bindings.ListVectorGetChild(vec), base, values, first, last-first); err != nil {
				return err
			}
		}
		if bindings.ListVectorSetSize(vec, bindings.IdxT(total)) == bindings.StateError {
			return fmt.Errorf("set list size %d", total)
		}
		writeValidity(vec, dst, arr, src, n)
		return nil
	}, nil
}

func structWriter(children []colWriter) colWriter {
	return func(vec bindings.Vector, dst int, arr arrow.Array, src, n int) error {
		s := arr.(*array.Struct)
		for i, w := range children {
			if err := w(bindings.StructVectorGetChild(vec, bindings.IdxT(i)), dst, s.Field(i), src, n); err != nil {
				return err
			}
		}
		writeValidity(vec, dst, arr, src, n)
		return nil
	}
}

// writeValidity copies the null bits of rows [src, src+n) to rows
// [dst, dst+n) of the vector's validity mask. Both are LSB-first bitmaps;
// DuckDB's is made of uint64 words. A range without nulls costs one popcount.
func writeValidity(vec bindings.Vector, dst int, arr arrow.Array, src, n int) {
	if arr.NullN() == 0 {
		return
	}
	d := arr.Data()
	bm := d.Buffers()[0]
	if bm == nil {
		return
	}
	bits, off := bm.Bytes(), d.Offset()+src
	if bitutil.CountSetBits(bits, off, n) == n {
		return
	}
	bindings.VectorEnsureValidityWritable(vec)
	mask := unsafe.Slice((*uint64)(bindings.VectorGetValidity(vec)), (dst+n+63)/64)
	for i := 0; i < n; i++ {
		r := dst + i
		if bitutil.BitIsSet(bits, off+i) {
			mask[r/64] |= 1 << (r % 64)
		} else {
			mask[r/64] &^= 1 << (r % 64)
		}
	}
}
