package bucket

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// kind is how a key column's values become hash input: decided once per
// column, so the per-row loops need no type dispatch.
type kind uint8

const (
	kindInt8 kind = iota + 1
	kindInt16
	kindInt32
	kindInt64
	kindUint8
	kindUint16
	kindUint32
	kindDate32
	kindDate64    // milliseconds, truncated to days
	kindTime32    // seconds or milliseconds, scaled to microseconds
	kindTime64    // microseconds or nanoseconds
	kindTimestamp // any unit, to microseconds
	kindString
	kindLargeString
	kindStringView
	kindBinary
	kindLargeBinary
	kindBinaryView
	kindFixedSizeBinary
	kindDecimal32
	kindDecimal64
	kindDecimal128
	kindDecimal256
)

// colSpec says how to hash one key column. Values of the integer kinds are
// hashed as v*mul when div is 0, and as floor(v/div) otherwise.
type colSpec struct {
	kind kind
	mul  int64
	div  int64
	// ext is set when the column is an extension type whose storage is
	// hashed (an Iceberg uuid is a fixed_size_binary(16) extension).
	ext bool
}

const millisPerDay = 86_400_000

// toMicros returns the mul and div that turn a value in unit u into
// microseconds. Nanoseconds are floored, as Iceberg's nanosToMicros does
// (Math.floorDiv), so instants before 1970 stay in their microsecond.
func toMicros(u arrow.TimeUnit) (mul, div int64) {
	switch u {
	case arrow.Second:
		return 1_000_000, 0
	case arrow.Millisecond:
		return 1_000, 0
	case arrow.Microsecond:
		return 1, 0
	default:
		return 1, 1_000
	}
}

// CheckType returns an error if dt cannot be a bucket key column. The catalog
// calls it when a table is created, so a bad bucket.key fails there rather
// than on the first write.
func CheckType(dt arrow.DataType) error {
	_, err := specOf(dt)
	return err
}

// specOf classifies dt. It is a dispatcher over every supported type, hence
// its length.
func specOf(dt arrow.DataType) (colSpec, error) {
	s := colSpec{mul: 1}
	switch t := dt.(type) {
	case arrow.ExtensionType:
		st, err := specOf(t.StorageType())
		if err != nil {
			return colSpec{}, fmt.Errorf("extension type %s: %w", t.ExtensionName(), err)
		}
		st.ext = true
		return st, nil
	case *arrow.Int8Type:
		s.kind = kindInt8
	case *arrow.Int16Type:
		s.kind = kindInt16
	case *arrow.Int32Type:
		s.kind = kindInt32
	case *arrow.Int64Type:
		s.kind = kindInt64
	case *arrow.Uint8Type:
		s.kind = kindUint8
	case *arrow.Uint16Type:
		s.kind = kindUint16
	case *arrow.Uint32Type:
		s.kind = kindUint32
	case *arrow.Date32Type:
		s.kind = kindDate32
	case *arrow.Date64Type:
		s.kind = kindDate64
	case *arrow.Time32Type:
		s.kind = kindTime32
		s.mul, s.div = toMicros(t.Unit)
	case *arrow.Time64Type:
		s.kind = kindTime64
		s.mul, s.div = toMicros(t.Unit)
	case *arrow.TimestampType:
		s.kind = kindTimestamp
		s.mul, s.div = toMicros(t.Unit)
	case *arrow.StringType:
		s.kind = kindString
	case *arrow.LargeStringType:
		s.kind = kindLargeString
	case *arrow.StringViewType:
		s.kind = kindStringView
	case *arrow.BinaryType:
		s.kind = kindBinary
	case *arrow.LargeBinaryType:
		s.kind = kindLargeBinary
	case *arrow.BinaryViewType:
		s.kind = kindBinaryView
	case *arrow.FixedSizeBinaryType:
		s.kind = kindFixedSizeBinary
	case *arrow.Decimal32Type:
		s.kind = kindDecimal32
	case *arrow.Decimal64Type:
		s.kind = kindDecimal64
	case *arrow.Decimal128Type:
		s.kind = kindDecimal128
	case *arrow.Decimal256Type:
		s.kind = kindDecimal256
	default:
		return colSpec{}, refusal(dt)
	}
	return s, nil
}

// refusal explains why dt is not a bucket key type.
func refusal(dt arrow.DataType) error {
	switch dt.ID() {
	case arrow.BOOL, arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return fmt.Errorf("type %s cannot be a bucket key: Iceberg does not bucket booleans or floating point", dt)
	case arrow.UINT64:
		return fmt.Errorf("type %s cannot be a bucket key: Iceberg has no type for values above MaxInt64", dt)
	case arrow.DICTIONARY:
		return fmt.Errorf("type %s cannot be a bucket key: decode the dictionary first", dt)
	}
	return fmt.Errorf("type %s cannot be a bucket key", dt)
}
