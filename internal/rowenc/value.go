package rowenc

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Typed access to the Raw bytes of non-null values, for the merge engines.

// Int reads a signed integer value of 1, 2, 4 or 8 bytes (TINYINT..BIGINT,
// DATE, TIME, TIMESTAMP).
func Int(raw []byte) int64 {
	le := binary.LittleEndian
	switch len(raw) {
	case 1:
		return int64(int8(raw[0]))
	case 2:
		return int64(int16(le.Uint16(raw)))
	case 4:
		return int64(int32(le.Uint32(raw)))
	}
	return int64(le.Uint64(raw))
}

// FromInt encodes x as an integer value of width bytes.
func FromInt(x int64, width int) []byte {
	b := make([]byte, width)
	le := binary.LittleEndian
	switch width {
	case 1:
		b[0] = byte(x)
	case 2:
		le.PutUint16(b, uint16(x))
	case 4:
		le.PutUint32(b, uint32(x))
	default:
		le.PutUint64(b, uint64(x))
	}
	return b
}

// Float reads a FLOAT (4 bytes) or DOUBLE (8 bytes) value.
func Float(raw []byte) float64 {
	if len(raw) == 4 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(raw)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(raw))
}

// FromFloat encodes x as a FLOAT (width 4) or DOUBLE value.
func FromFloat(x float64, width int) []byte {
	if width == 4 {
		return binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(x)))
	}
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(x))
}

// Decimal reads a DECIMAL value (unscaled).
func Decimal(raw []byte) decimal128.Num {
	le := binary.LittleEndian
	return decimal128.New(int64(le.Uint64(raw[8:])), le.Uint64(raw))
}

// FromDecimal encodes an unscaled DECIMAL value.
func FromDecimal(n decimal128.Num) []byte {
	le := binary.LittleEndian
	return le.AppendUint64(le.AppendUint64(nil, n.LowBits()), uint64(n.HighBits()))
}

// Bool reads a BOOLEAN value.
func Bool(raw []byte) bool { return raw[0] == 1 }

// FromBool encodes a BOOLEAN value.
func FromBool(b bool) []byte {
	if b {
		return []byte{1}
	}
	return []byte{0}
}

// Comparable reports whether Compare orders values of type dt.
func Comparable(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIME64,
		arrow.TIMESTAMP, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.STRING, arrow.BINARY:
		return true
	}
	return false
}

// Compare orders two non-null values of type dt (Comparable): -1, 0 or +1.
// Floats order by cmp.Compare (NaN below every number).
func Compare(dt arrow.DataType, a, b []byte) int {
	switch dt.ID() {
	case arrow.BOOL, arrow.STRING, arrow.BINARY:
		return bytes.Compare(a, b)
	case arrow.FLOAT32, arrow.FLOAT64:
		return cmp.Compare(Float(a), Float(b))
	case arrow.DECIMAL128:
		return Decimal(a).Cmp(Decimal(b))
	}
	return cmp.Compare(Int(a), Int(b))
}
