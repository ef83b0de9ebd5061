package rowenc

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// The row encoding (part of the key index's format, docs/format/keyindex.md):
//
//	row    := uvarint(ncols) | nullmap(ncols) | value of each non-null column
//	nullmap(n) := ceil(n/8) bytes, bit i%8 of byte i/8 set when item i is null
//	value  := fixed-width types: their bytes, little-endian
//	            (BOOLEAN 1 byte, TINYINT 1, SMALLINT 2, INTEGER and DATE 4,
//	            BIGINT, TIME, TIMESTAMP[TZ], FLOAT 4, DOUBLE 8, DECIMAL 16:
//	            low 64 bits then high 64 bits)
//	          other types: uvarint(len) | len bytes of
//	            VARCHAR, BLOB  the bytes
//	            LIST           uvarint(n) | nullmap(n) | value of each non-null element
//	            STRUCT         nullmap(nfields) | value of each non-null field
//	            MAP            uvarint(n) | nullmap(n) of the values | each entry's
//	                           key value, then its value unless null
//
// A row with fewer columns than the schema (written before an ADD COLUMN)
// reads the missing columns as nulls.

// Value is one column of a row: its encoded bytes (without the length
// prefix of a variable-width value), or null.
type Value struct {
	Raw  []byte
	Null bool
}

// Null is the null value.
var Null = Value{Null: true}

// codec encodes and decodes the values of one type.
type codec struct {
	dt    arrow.DataType
	fixed int // the width of a fixed-width value; 0: variable
	enc   func(dst []byte, a arrow.Array, i int) []byte
	kids  []*codec // list element; struct fields; map key, value
}

// Codec encodes the rows of one schema.
type Codec struct {
	fields []arrow.Field
	cols   []*codec
}

// NewCodec returns the codec of rows of fields.
func NewCodec(fields []arrow.Field) (*Codec, error) {
	c := &Codec{fields: fields}
	for _, f := range fields {
		cc, err := newCodec(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		c.cols = append(c.cols, cc)
	}
	return c, nil
}

// NumColumns is the number of columns of the codec's rows.
func (c *Codec) NumColumns() int { return len(c.cols) }

// Fields are the columns of the codec's rows.
func (c *Codec) Fields() []arrow.Field { return c.fields }

// Encode appends the encoding of row i of column col (not null) to dst,
// without a length prefix: Value.Raw.
func (c *Codec) Encode(dst []byte, col int, a arrow.Array, i int) []byte {
	return c.cols[col].enc(dst, a, i)
}

// Values sets vals[col] to the values of row i of cols (one array per
// column; a nil array leaves vals[col] as it is), their bytes appended to
// buf, and returns the grown buf.
func (c *Codec) Values(cols []arrow.Array, i int, buf []byte, vals []Value) []byte {
	var starts [64]int
	var st []int
	if len(cols) <= len(starts) {
		st = starts[:len(cols)]
	} else {
		st = make([]int, len(cols))
	}
	for col, a := range cols {
		st[col] = -1
		if a == nil {
			continue
		}
		if a.IsNull(i) {
			vals[col] = Null
			continue
		}
		st[col] = len(buf)
		buf = c.cols[col].enc(buf, a, i)
	}
	end := len(buf)
	for col := len(cols) - 1; col >= 0; col-- {
		if st[col] >= 0 {
			vals[col] = Value{Raw: buf[st[col]:end:end]}
			end = st[col]
		}
	}
	return buf
}

// AppendRow appends the row encoding of vals to dst.
func (c *Codec) AppendRow(dst []byte, vals []Value) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	dst = appendNullmap(dst, len(vals), func(i int) bool { return vals[i].Null })
	for i, v := range vals {
		if !v.Null {
			dst = c.cols[i].appendValue(dst, v.Raw)
		}
	}
	return dst
}

// DecodeRow splits an encoded row into vals (grown to the codec's column
// count), each Raw aliasing b. Columns the row lacks are null; a row with
// more columns than the codec is ErrCorrupt.
func (c *Codec) DecodeRow(b []byte, vals []Value) ([]Value, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(c.cols)) {
		return nil, fmt.Errorf("%w: row of %d columns, schema has %d", ErrCorrupt, n, len(c.cols))
	}
	b = b[k:]
	nm := (int(n) + 7) / 8
	if len(b) < nm {
		return nil, ErrCorrupt
	}
	nulls, b := b[:nm], b[nm:]
	vals = append(vals[:0], make([]Value, len(c.cols))...)
	for i := range c.cols {
		if i >= int(n) || nulls[i/8]&(1<<(i%8)) != 0 {
			vals[i] = Null
			continue
		}
		raw, rest, err := c.cols[i].split(b)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.fields[i].Name, err)
		}
		vals[i], b = Value{Raw: raw}, rest
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the row", ErrCorrupt, len(b))
	}
	return vals, nil
}

// appendValue appends one value in a sequence: fixed-width as is, else
// length-prefixed.
func (c *codec) appendValue(dst, raw []byte) []byte {
	if c.fixed == 0 {
		dst = binary.AppendUvarint(dst, uint64(len(raw)))
	}
	return append(dst, raw...)
}

// split reads one value of a sequence from b.
func (c *codec) split(b []byte) (raw, rest []byte, err error) {
	if c.fixed > 0 {
		if len(b) < c.fixed {
			return nil, nil, ErrCorrupt
		}
		return b[:c.fixed], b[c.fixed:], nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, ErrCorrupt
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

func appendNullmap(dst []byte, n int, null func(i int) bool) []byte {
	for i := 0; i < n; i += 8 {
		var by byte
		for j := i; j < min(n, i+8); j++ {
			if null(j) {
				by |= 1 << (j - i)
			}
		}
		dst = append(dst, by)
	}
	return dst
}
