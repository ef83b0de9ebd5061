package tables

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrow encodings a client may send that the table stores plainly. Before
// a column is matched against the table's type (conformColumn), it is
// turned into its plain layout with the same values:
//
//	string_view, large_string          → string
//	binary_view, large_binary,
//	fixed_size_binary                  → binary
//	large_list, fixed_size_list        → list (elements plain too)
//	dictionary<indices, values>        → values, decoded (indices checked first)
//	extension types                    → their storage
//	list, struct, map                  → the same, with plain children
//
// Unions, run-end encoded arrays and list views have no table type and are
// refused, naming their type. The result then takes conformColumn's usual
// path (type check, safe widenings).

// plainArray returns col in its plain layout: col itself (retained) when it
// already is, else a new array. The caller releases the result.
func plainArray(col arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	if isPlain(col.DataType()) {
		col.Retain()
		return col, nil
	}
	switch c := col.(type) {
	case array.ExtensionArray:
		return plainArray(c.Storage(), mem)
	case *array.Dictionary:
		return decodeDictionary(c, mem)
	case *array.StringView:
		return copyStrings(c, c.Len(), c.Value, mem), nil
	case *array.LargeString:
		return copyStrings(c, c.Len(), c.Value, mem), nil
	case *array.BinaryView:
		return copyBinary(c, c.Len(), c.Value, mem), nil
	case *array.LargeBinary:
		return copyBinary(c, c.Len(), c.Value, mem), nil
	case *array.FixedSizeBinary:
		return copyBinary(c, c.Len(), c.Value, mem), nil
	case *array.LargeList:
		return relist(c, c.Len(), c.ValueOffsets, c.ListValues(), c.DataType().(*arrow.LargeListType).ElemField(), mem)
	case *array.FixedSizeList:
		n := int64(c.DataType().(*arrow.FixedSizeListType).Len())
		bounds := func(i int) (int64, int64) {
			at := int64(c.Offset()+i) * n
			return at, at + n
		}
		return relist(c, c.Len(), bounds, c.ListValues(), c.DataType().(*arrow.FixedSizeListType).ElemField(), mem)
	case *array.Map:
		return nil, fmt.Errorf("map of %s to %s: send keys and values as plain types", c.DataType().(*arrow.MapType).KeyType(), c.DataType().(*arrow.MapType).ItemType())
	case *array.List:
		return relist(c, c.Len(), c.ValueOffsets, c.ListValues(), c.DataType().(*arrow.ListType).ElemField(), mem)
	case *array.Struct:
		return restruct(c, mem)
	}
	return nil, fmt.Errorf("type %s is not supported: no table type holds it", col.DataType())
}

// isPlain reports whether values of t are stored as they are.
func isPlain(t arrow.DataType) bool {
	switch t := t.(type) {
	case arrow.ExtensionType, *arrow.DictionaryType:
		return false
	case *arrow.ListType:
		return isPlain(t.Elem())
	case *arrow.MapType:
		return isPlain(t.KeyType()) && isPlain(t.ItemType())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !isPlain(f.Type) {
				return false
			}
		}
		return true
	}
	switch t.ID() {
	case arrow.STRING_VIEW, arrow.BINARY_VIEW, arrow.LARGE_STRING, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.LARGE_LIST,
		arrow.FIXED_SIZE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.SPARSE_UNION, arrow.DENSE_UNION,
		arrow.RUN_END_ENCODED:
		return false
	}
	return true
}

// decodeDictionary checks that every index points into the dictionary,
// then gathers the values.
func decodeDictionary(d *array.Dictionary, mem memory.Allocator) (arrow.Array, error) {
	dict, err := plainArray(d.Dictionary(), mem)
	if err != nil {
		return nil, fmt.Errorf("dictionary values: %w", err)
	}
	defer dict.Release()
	n := dict.Len()
	for i := 0; i < d.Len(); i++ {
		if d.IsValid(i) {
			if k := d.GetValueIndex(i); k < 0 || k >= n {
				return nil, fmt.Errorf("dictionary index %d at row %d is outside the dictionary of %d values", k, i, n)
			}
		}
	}
	out, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), dict, d.Indices())
	if err != nil {
		return nil, fmt.Errorf("decoding the dictionary of %s: %v", dict.DataType(), err)
	}
	return out, nil
}

// copyStrings copies n string values of src into a plain VARCHAR array.
func copyStrings(src arrow.Array, n int, value func(int) string, mem memory.Allocator) arrow.Array {
	return copyValues(array.NewStringBuilder(mem), src, n, value)
}

// copyBinary copies n binary values of src into a plain BLOB array.
func copyBinary(src arrow.Array, n int, value func(int) []byte, mem memory.Allocator) arrow.Array {
	return copyValues(array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary), src, n, value)
}

// copyValues appends src's n values (value(i), or NULL) to b, with the
// offsets and the data reserved up front, and returns the array.
func copyValues[T string | []byte](b interface {
	array.Builder
	ReserveData(int)
	Append(T)
}, src arrow.Array, n int, value func(int) T) arrow.Array {
	defer b.Release()
	b.Reserve(n)
	size := 0
	for i := 0; i < n; i++ {
		if src.IsValid(i) {
			size += len(value(i))
		}
	}
	b.ReserveData(size)
	for i := 0; i < n; i++ {
		if src.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(value(i))
		}
	}
	return b.NewArray()
}

// relist builds a list<elem> with plain elements from any list layout:
// bounds gives each row's element range in values.
func relist(src arrow.Array, n int, bounds func(int) (int64, int64), values arrow.Array, elem arrow.Field, mem memory.Allocator) (arrow.Array, error) {
	// The rows' elements, contiguous: from the first row's start to the
	// last row's end.
	var lo, hi int64
	if n > 0 {
		lo, _ = bounds(0)
		_, hi = bounds(n - 1)
	}
	if hi-lo > 1<<31-1 {
		return nil, fmt.Errorf("%d list elements: more than a list's 32-bit offsets hold", hi-lo)
	}
	sub := array.NewSlice(values, lo, hi)
	defer sub.Release()
	child, err := plainArray(sub, mem)
	if err != nil {
		return nil, fmt.Errorf("list element: %w", err)
	}
	defer child.Release()
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	for i := 0; i < n; i++ {
		from, _ := bounds(i)
		offs[i] = int32(from - lo)
	}
	offs[n] = int32(hi - lo)
	valid := validity(src, mem)
	if valid != nil {
		defer valid.Release()
	}
	elem.Type = child.DataType()
	typ := arrow.ListOfField(elem)
	data := array.NewData(typ, n, []*memory.Buffer{valid, offsets}, []arrow.ArrayData{child.Data()}, src.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// restruct rebuilds a struct with plain children.
func restruct(c *array.Struct, mem memory.Allocator) (arrow.Array, error) {
	st := c.DataType().(*arrow.StructType)
	fields := make([]arrow.Field, st.NumFields())
	children := make([]arrow.ArrayData, st.NumFields())
	defer func() {
		for _, ch := range children {
			if ch != nil {
				ch.Release()
			}
		}
	}()
	for i, f := range st.Fields() {
		field := array.NewSlice(c.Field(i), int64(c.Offset()), int64(c.Offset()+c.Len()))
		plain, err := plainArray(field, mem)
		field.Release()
		if err != nil {
			return nil, fmt.Errorf("struct field %q: %w", f.Name, err)
		}
		f.Type = plain.DataType()
		fields[i] = f
		children[i] = plain.Data()
		children[i].Retain()
		plain.Release()
	}
	valid := validity(c, mem)
	if valid != nil {
		defer valid.Release()
	}
	data := array.NewData(arrow.StructOf(fields...), c.Len(), []*memory.Buffer{valid}, children, c.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// validity is a copy of arr's validity bitmap starting at bit 0, or nil
// when arr has no nulls.
func validity(arr arrow.Array, mem memory.Allocator) *memory.Buffer {
	if arr.NullN() == 0 {
		return nil
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(arr.Len()))))
	bits := buf.Bytes()
	for i := 0; i < arr.Len(); i++ {
		bitutil.SetBitTo(bits, i, arr.IsValid(i))
	}
	return buf
}
