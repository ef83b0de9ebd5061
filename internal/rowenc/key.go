package rowenc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The key encoding of one column value (part of the key index's format):
//
//	BOOLEAN                      1 byte: 0 false, 1 true
//	TINYINT..BIGINT, DATE, TIME,  big-endian two's complement of the type's
//	TIMESTAMP[TZ]                width with the sign bit flipped
//	DECIMAL                      16 bytes: high 64 bits as a signed integer
//	                             above, then the low 64 bits big-endian
//	VARCHAR, BLOB                the bytes with 0x00 written as 0x00 0xFF,
//	                             then the terminator 0x00 0x01
//
// Each column's bytes are self-delimiting, so the key of several columns is
// their concatenation and sorts column by column. Floats (whose equality is
// not the bytes') and nested types cannot be key columns; KeyEncoder refuses
// them.

// ErrKeyType is returned for a column type that cannot be part of a key.
var ErrKeyType = errors.New("type cannot be a key column")

// ErrCorrupt is returned for bytes that are not a valid encoding.
var ErrCorrupt = errors.New("corrupt encoded row or key")

// KeyFunc appends the key encoding of row of col (not null) to dst.
type KeyFunc func(dst []byte, col arrow.Array, row int) []byte

// KeyEncoder returns the key encoding of a column of type dt.
func KeyEncoder(dt arrow.DataType) (KeyFunc, error) {
	switch dt.ID() {
	case arrow.BOOL:
		return func(dst []byte, c arrow.Array, i int) []byte {
			if c.(*array.Boolean).Value(i) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}, nil
	case arrow.INT8:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return append(dst, uint8(c.(*array.Int8).Value(i))^0x80)
		}, nil
	case arrow.INT16:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return binary.BigEndian.AppendUint16(dst, uint16(c.(*array.Int16).Value(i))^1<<15)
		}, nil
	case arrow.INT32:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return binary.BigEndian.AppendUint32(dst, uint32(c.(*array.Int32).Value(i))^1<<31)
		}, nil
	case arrow.DATE32:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return binary.BigEndian.AppendUint32(dst, uint32(c.(*array.Date32).Value(i))^1<<31)
		}, nil
	case arrow.INT64:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return binary.BigEndian.AppendUint64(dst, uint64(c.(*array.Int64).Value(i))^1<<63)
		}, nil
	case arrow.TIME64:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return binary.BigEndian.AppendUint64(dst, uint64(c.(*array.Time64).Value(i))^1<<63)
		}, nil
	case arrow.TIMESTAMP:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return binary.BigEndian.AppendUint64(dst, uint64(c.(*array.Timestamp).Value(i))^1<<63)
		}, nil
	case arrow.DECIMAL128:
		return func(dst []byte, c arrow.Array, i int) []byte {
			v := c.(*array.Decimal128).Value(i)
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.HighBits())^1<<63)
			return binary.BigEndian.AppendUint64(dst, v.LowBits())
		}, nil
	case arrow.STRING:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return appendEscaped(dst, c.(*array.String).Value(i))
		}, nil
	case arrow.BINARY:
		return func(dst []byte, c arrow.Array, i int) []byte {
			return appendEscaped(dst, c.(*array.Binary).Value(i))
		}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrKeyType, dt)
}

func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, s[i])
		}
	}
	return append(dst, 0, 1)
}

// unescape reads one escaped byte string from b, returning it and the rest.
func unescape(b []byte, dst []byte) (val, rest []byte, err error) {
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			dst = append(dst, b[i])
			continue
		}
		if i+1 >= len(b) {
			return nil, nil, ErrCorrupt
		}
		switch b[i+1] {
		case 0xFF:
			dst = append(dst, 0)
			i++
		case 1:
			return dst, b[i+2:], nil
		default:
			return nil, nil, ErrCorrupt
		}
	}
	return nil, nil, ErrCorrupt
}

// DecodeKey appends the columns of an encoded key to builders, one per key
// column, each of the column's type.
func DecodeKey(key []byte, bs []array.Builder) error {
	var scratch []byte
	for _, b := range bs {
		var err error
		if key, scratch, err = decodeKeyColumn(key, b, scratch[:0]); err != nil {
			return err
		}
	}
	if len(key) != 0 {
		return fmt.Errorf("%w: %d bytes after the key", ErrCorrupt, len(key))
	}
	return nil
}

func decodeKeyColumn(key []byte, b array.Builder, scratch []byte) ([]byte, []byte, error) {
	need := func(n int) bool { return len(key) >= n }
	be := binary.BigEndian
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if !need(1) || key[0] > 1 {
			return nil, nil, ErrCorrupt
		}
		b.Append(key[0] == 1)
		return key[1:], scratch, nil
	case *array.Int8Builder:
		if !need(1) {
			return nil, nil, ErrCorrupt
		}
		b.Append(int8(key[0] ^ 0x80))
		return key[1:], scratch, nil
	case *array.Int16Builder:
		if !need(2) {
			return nil, nil, ErrCorrupt
		}
		b.Append(int16(be.Uint16(key) ^ 1<<15))
		return key[2:], scratch, nil
	case *array.Int32Builder:
		if !need(4) {
			return nil, nil, ErrCorrupt
		}
		b.Append(int32(be.Uint32(key) ^ 1<<31))
		return key[4:], scratch, nil
	case *array.Date32Builder:
		if !need(4) {
			return nil, nil, ErrCorrupt
		}
		b.Append(arrow.Date32(int32(be.Uint32(key) ^ 1<<31)))
		return key[4:], scratch, nil
	case *array.Int64Builder:
		if !need(8) {
			return nil, nil, ErrCorrupt
		}
		b.Append(int64(be.Uint64(key) ^ 1<<63))
		return key[8:], scratch, nil
	case *array.Time64Builder:
		if !need(8) {
			return nil, nil, ErrCorrupt
		}
		b.Append(arrow.Time64(int64(be.Uint64(key) ^ 1<<63)))
		return key[8:], scratch, nil
	case *array.TimestampBuilder:
		if !need(8) {
			return nil, nil, ErrCorrupt
		}
		b.Append(arrow.Timestamp(int64(be.Uint64(key) ^ 1<<63)))
		return key[8:], scratch, nil
	case *array.Decimal128Builder:
		if !need(16) {
			return nil, nil, ErrCorrupt
		}
		b.Append(decimal128.New(int64(be.Uint64(key)^1<<63), be.Uint64(key[8:])))
		return key[16:], scratch, nil
	case *array.StringBuilder:
		v, rest, err := unescape(key, scratch)
		if err != nil {
			return nil, nil, err
		}
		b.BinaryBuilder.Append(v)
		return rest, v, nil
	case *array.BinaryBuilder:
		v, rest, err := unescape(key, scratch)
		if err != nil {
			return nil, nil, err
		}
		b.Append(v)
		return rest, v, nil
	}
	return nil, nil, fmt.Errorf("%w: builder %T", ErrKeyType, b)
}
