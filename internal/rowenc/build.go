package rowenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// AppendTo appends v, a value of column col, to b, a builder of the
// column's type.
func (c *Codec) AppendTo(b array.Builder, col int, v Value) error {
	if v.Null {
		b.AppendNull()
		return nil
	}
	if err := c.cols[col].build(b, v.Raw); err != nil {
		return fmt.Errorf("column %q: %w", c.fields[col].Name, err)
	}
	return nil
}

// AppendRowTo decodes an encoded row into builders, one per column of
// cols (nil: every column), each of that column's type.
func (c *Codec) AppendRowTo(bs []array.Builder, cols []int, row []byte, scratch []Value) ([]Value, error) {
	vals, err := c.DecodeRow(row, scratch)
	if err != nil {
		return scratch, err
	}
	for i, b := range bs {
		col := i
		if cols != nil {
			col = cols[i]
		}
		if err := c.AppendTo(b, col, vals[col]); err != nil {
			return vals, err
		}
	}
	return vals, nil
}

// build appends the value raw (exactly one value's bytes) to b.
func (c *codec) build(b array.Builder, raw []byte) error {
	if c.fixed > 0 && len(raw) != c.fixed {
		return ErrCorrupt
	}
	le := binary.LittleEndian
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if raw[0] > 1 {
			return ErrCorrupt
		}
		b.Append(raw[0] == 1)
	case *array.Int8Builder:
		b.Append(int8(raw[0]))
	case *array.Int16Builder:
		b.Append(int16(le.Uint16(raw)))
	case *array.Int32Builder:
		b.Append(int32(le.Uint32(raw)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(int32(le.Uint32(raw))))
	case *array.Float32Builder:
		b.Append(math.Float32frombits(le.Uint32(raw)))
	case *array.Int64Builder:
		b.Append(int64(le.Uint64(raw)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(int64(le.Uint64(raw))))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(int64(le.Uint64(raw))))
	case *array.Float64Builder:
		b.Append(math.Float64frombits(le.Uint64(raw)))
	case *array.Decimal128Builder:
		b.Append(decimal128.New(int64(le.Uint64(raw[8:])), le.Uint64(raw)))
	case *array.StringBuilder:
		b.Append(unsafe.String(unsafe.SliceData(raw), len(raw))) // copied by Append
	case *array.BinaryBuilder:
		b.Append(raw)
	case *array.MapBuilder: // before ListBuilder: a map is built as a list of entries
		return c.buildMap(b, raw)
	case *array.ListBuilder:
		return c.buildList(b, raw)
	case *array.StructBuilder:
		return c.buildStruct(b, raw)
	default:
		return fmt.Errorf("builder %T for %s", b, c.dt)
	}
	return nil
}

// items reads n and a nullmap of n from raw.
func items(raw []byte) (n int, nulls, rest []byte, err error) {
	u, k := binary.Uvarint(raw)
	if k <= 0 || u > uint64(len(raw))*8 { // each item takes a nullmap bit at least
		return 0, nil, nil, ErrCorrupt
	}
	n = int(u)
	raw = raw[k:]
	nm := (n + 7) / 8
	if len(raw) < nm {
		return 0, nil, nil, ErrCorrupt
	}
	return n, raw[:nm], raw[nm:], nil
}

func isNull(nulls []byte, i int) bool { return nulls[i/8]&(1<<(i%8)) != 0 }

func (c *codec) buildList(b *array.ListBuilder, raw []byte) error {
	n, nulls, rest, err := items(raw)
	if err != nil {
		return err
	}
	b.Append(true)
	vb := b.ValueBuilder()
	elem := c.kids[0]
	for j := 0; j < n; j++ {
		if isNull(nulls, j) {
			vb.AppendNull()
			continue
		}
		var v []byte
		if v, rest, err = elem.split(rest); err != nil {
			return err
		}
		if err := elem.build(vb, v); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return ErrCorrupt
	}
	return nil
}

func (c *codec) buildStruct(b *array.StructBuilder, raw []byte) error {
	nm := (len(c.kids) + 7) / 8
	if len(raw) < nm {
		return ErrCorrupt
	}
	nulls, rest := raw[:nm], raw[nm:]
	b.Append(true)
	for f, k := range c.kids {
		fb := b.FieldBuilder(f)
		if isNull(nulls, f) {
			fb.AppendNull()
			continue
		}
		var v []byte
		var err error
		if v, rest, err = k.split(rest); err != nil {
			return err
		}
		if err := k.build(fb, v); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return ErrCorrupt
	}
	return nil
}

func (c *codec) buildMap(b *array.MapBuilder, raw []byte) error {
	n, nulls, rest, err := items(raw)
	if err != nil {
		return err
	}
	b.Append(true)
	kb, ib := b.KeyBuilder(), b.ItemBuilder()
	kc, vc := c.kids[0], c.kids[1]
	for j := 0; j < n; j++ {
		var v []byte
		if v, rest, err = kc.split(rest); err != nil {
			return err
		}
		if err := kc.build(kb, v); err != nil {
			return err
		}
		if isNull(nulls, j) {
			ib.AppendNull()
			continue
		}
		if v, rest, err = vc.split(rest); err != nil {
			return err
		}
		if err := vc.build(ib, v); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return ErrCorrupt
	}
	return nil
}
