package bucket

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/twmb/murmur3"
)

// sink takes each row's key bytes. With a single-column key it hashes them
// and stores the bucket at once; with several columns it feeds each row's
// stream. The loops over integer values test the mode once and inline the
// hash (see feedLongs); the loops over bytes call sink per row, a direct call
// next to the murmur3 call it makes anyway.
type sink struct {
	n       uint32
	out     []int32  // single-column mode: the buckets
	streams []stream // multi-column mode, one per row; nil otherwise
}

func (s *sink) bytes(i int, b []byte) {
	if s.streams == nil {
		s.out[i] = int32((murmur3.SeedSum32(0, b) & 0x7fffffff) % s.n)
		return
	}
	write(&s.streams[i], b)
}

func (s *sink) str(i int, b string) {
	if s.streams == nil {
		s.out[i] = int32((murmur3.StringSum32(b) & 0x7fffffff) % s.n)
		return
	}
	write(&s.streams[i], b)
}

// null marks row i as having a null key; it lands in bucket 0.
func (s *sink) null(i int) {
	if s.streams == nil {
		s.out[i] = 0
		return
	}
	s.streams[i].null = true
}

// validity reads an array's null bitmap without an interface call per row.
type validity struct {
	bits []byte
	off  int
	any  bool // the array has nulls; when false bits is not read
}

func validityOf(arr arrow.Array) validity {
	return validity{bits: arr.NullBitmapBytes(), off: arr.Data().Offset(), any: arr.NullN() > 0}
}

func (v validity) isNull(i int) bool {
	return v.any && !bitutil.BitIsSet(v.bits, v.off+i)
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32
}

// feed hands every row of arr, a column of the kind spec describes, to s. It
// dispatches on the kind once; the loops it calls do the rows.
func feed(s *sink, arr arrow.Array, spec colSpec) {
	if spec.ext {
		arr = arr.(array.ExtensionArray).Storage()
	}
	v := validityOf(arr)
	switch spec.kind {
	case kindInt8:
		feedLongs(s, v, arr.(*array.Int8).Values(), 1)
	case kindInt16:
		feedLongs(s, v, arr.(*array.Int16).Values(), 1)
	case kindInt32:
		feedLongs(s, v, arr.(*array.Int32).Values(), 1)
	case kindInt64:
		feedLongs(s, v, arr.(*array.Int64).Values(), 1)
	case kindUint8:
		feedLongs(s, v, arr.(*array.Uint8).Values(), 1)
	case kindUint16:
		feedLongs(s, v, arr.(*array.Uint16).Values(), 1)
	case kindUint32:
		feedLongs(s, v, arr.(*array.Uint32).Values(), 1)
	case kindDate32:
		feedLongs(s, v, arr.(*array.Date32).Values(), 1)
	case kindDate64:
		// Truncated, not floored: valid date64 values are whole days, and
		// for the others truncation is what arrow-go's casts and its
		// Parquet writer (pqarrow) do, so the hash agrees with the date the
		// lake ends up storing.
		feedDivided(s, v, arr.(*array.Date64).Values(), millisPerDay, false)
	case kindTime32:
		feedLongs(s, v, arr.(*array.Time32).Values(), spec.mul)
	case kindTime64:
		feedMicros(s, v, arr.(*array.Time64).Values(), spec)
	case kindTimestamp:
		feedMicros(s, v, arr.(*array.Timestamp).Values(), spec)
	case kindString, kindBinary:
		feedVar(s, v, arr.(offsets32).ValueOffsets(), rawValues(arr))
	case kindLargeString, kindLargeBinary:
		feedVar(s, v, arr.(offsets64).ValueOffsets(), rawValues(arr))
	case kindStringView:
		feedStringView(s, v, arr.(*array.StringView))
	case kindBinaryView:
		feedBinaryView(s, v, arr.(*array.BinaryView))
	case kindFixedSizeBinary:
		feedFixed(s, v, arr.(*array.FixedSizeBinary))
	case kindDecimal32:
		feedDecimal64(s, v, arr.(*array.Decimal32).Values())
	case kindDecimal64:
		feedDecimal64(s, v, arr.(*array.Decimal64).Values())
	case kindDecimal128:
		feedDecimal128(s, v, arr.(*array.Decimal128))
	case kindDecimal256:
		feedDecimal256(s, v, arr.(*array.Decimal256))
	default:
		panic("bucket: unclassified key kind") // specOf and feed disagree
	}
}

// feedLongs hashes each value times mul as an Iceberg long. The mode test is
// hoisted and hashLong is spelled out in the loop, because neither it nor a
// sink method fits the inliner's budget and the two calls per row cost a
// third of the int64 time (BenchmarkAssign/int64: 300-400 µs against
// 450-700 µs per 64k rows).
func feedLongs[T integer](s *sink, v validity, vals []T, mul int64) {
	if s.streams != nil {
		for i, x := range vals {
			if v.isNull(i) {
				s.null(i)
				continue
			}
			s.streams[i].writeLong(int64(x) * mul)
		}
		return
	}
	out, n := s.out[:len(vals)], s.n
	for i, x := range vals {
		if v.isNull(i) {
			out[i] = 0
			continue
		}
		y := uint64(int64(x) * mul)
		out[i] = int32((fmix(mix(mix(0, uint32(y)), uint32(y>>32))^8) & 0x7fffffff) % n) // hashLong
	}
}

// feedDivided hashes each value divided by div as an Iceberg long, rounding
// down when floor is set and toward zero otherwise. It is feedLongs with a
// division, for nanoseconds to microseconds and date64 milliseconds to days.
func feedDivided[T ~int64](s *sink, v validity, vals []T, div int64, floor bool) {
	if s.streams != nil {
		for i, x := range vals {
			if v.isNull(i) {
				s.null(i)
				continue
			}
			s.streams[i].writeLong(divide(int64(x), div, floor))
		}
		return
	}
	out, n := s.out[:len(vals)], s.n
	for i, x := range vals {
		if v.isNull(i) {
			out[i] = 0
			continue
		}
		y := uint64(divide(int64(x), div, floor))
		out[i] = int32((fmix(mix(mix(0, uint32(y)), uint32(y>>32))^8) & 0x7fffffff) % n) // hashLong
	}
}

func divide(a, b int64, floor bool) int64 {
	q := a / b
	if floor && a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// feedMicros scales or floors a 64-bit time or timestamp to microseconds.
func feedMicros[T ~int64](s *sink, v validity, vals []T, spec colSpec) {
	if spec.div != 0 {
		feedDivided(s, v, vals, spec.div, true)
		return
	}
	feedLongs(s, v, vals, spec.mul)
}

type offsets32 interface{ ValueOffsets() []int32 }
type offsets64 interface{ ValueOffsets() []int64 }

// rawValues is the whole data buffer of a string or binary array; its
// ValueOffsets index into it directly, whatever the array's offset.
func rawValues(arr arrow.Array) []byte {
	if b := arr.Data().Buffers()[2]; b != nil {
		return b.Bytes()
	}
	return nil
}

func feedVar[O int32 | int64](s *sink, v validity, offs []O, data []byte) {
	for i := range len(offs) - 1 {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		s.bytes(i, data[offs[i]:offs[i+1]])
	}
}

func feedStringView(s *sink, v validity, a *array.StringView) {
	for i := range a.Len() {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		s.str(i, a.Value(i))
	}
}

func feedBinaryView(s *sink, v validity, a *array.BinaryView) {
	for i := range a.Len() {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		s.bytes(i, a.Value(i))
	}
}

func feedFixed(s *sink, v validity, a *array.FixedSizeBinary) {
	w := a.DataType().(*arrow.FixedSizeBinaryType).ByteWidth
	var data []byte
	if b := a.Data().Buffers()[1]; b != nil {
		data = b.Bytes()
	}
	base := a.Data().Offset() * w
	for i := range a.Len() {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		at := base + i*w
		s.bytes(i, data[at:at+w])
	}
}

func feedDecimal64[T ~int32 | ~int64](s *sink, v validity, vals []T) {
	var scratch [32]byte
	for i, x := range vals {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		s.bytes(i, decimalBytes64(&scratch, int64(x)))
	}
}

func feedDecimal128(s *sink, v validity, a *array.Decimal128) {
	var scratch [32]byte
	for i, x := range a.Values() {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		s.bytes(i, decimalBytes128(&scratch, x.HighBits(), x.LowBits()))
	}
}

func feedDecimal256(s *sink, v validity, a *array.Decimal256) {
	var scratch [32]byte
	for i, x := range a.Values() {
		if v.isNull(i) {
			s.null(i)
			continue
		}
		s.bytes(i, decimalBytes256(&scratch, x.Array()))
	}
}

// Compile-time checks that the offset interfaces match arrow-go's arrays.
var (
	_ offsets32 = (*array.String)(nil)
	_ offsets32 = (*array.Binary)(nil)
	_ offsets64 = (*array.LargeString)(nil)
	_ offsets64 = (*array.LargeBinary)(nil)
)
