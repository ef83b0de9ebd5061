package bucket

import (
	"encoding/binary"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/murmur3"
)

// The reference values of the Iceberg spec, Appendix B.
const (
	specInt       int32 = 2017239379  // int and long 34
	specDecimal   int32 = -500754589  // decimal(4,2) 14.20
	specDate      int32 = -653330422  // 2017-11-16
	specTime      int32 = -662762989  // 22:31:08
	specTimestamp int32 = -2047944441 // 2017-11-16T22:31:08, and 14:31:08-08:00
	specString    int32 = 1210000089  // "iceberg"
	specBinary    int32 = -188683207  // 00 01 02 03, as binary and as fixed
	specUUID      int32 = 1488055340  // f79c3e09-677c-4bbd-a479-3f349cb785e7
)

var (
	specDay   = int64(time.Date(2017, 11, 16, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	specTOD   = (22*time.Hour + 31*time.Minute + 8*time.Second).Microseconds()
	specInst  = time.Date(2017, 11, 16, 22, 31, 8, 0, time.UTC)
	specBytes = []byte{0, 1, 2, 3}
	specUUIDb = [16]byte{0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7}
)

// oneValue builds a one-element array of dt holding v, with the builder's
// generic AppendValueFromString where it reads v unambiguously, and typed
// appends elsewhere.
func oneValue(t *testing.T, mem memory.Allocator, dt arrow.DataType, v any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(v.(int)))
	case *array.Int16Builder:
		b.Append(int16(v.(int)))
	case *array.Int32Builder:
		b.Append(int32(v.(int)))
	case *array.Int64Builder:
		b.Append(int64(v.(int)))
	case *array.Uint8Builder:
		b.Append(uint8(v.(int)))
	case *array.Uint16Builder:
		b.Append(uint16(v.(int)))
	case *array.Uint32Builder:
		b.Append(uint32(v.(int)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int64)))
	case *array.Date64Builder:
		b.Append(arrow.Date64(v.(int64)))
	case *array.Time32Builder:
		b.Append(arrow.Time32(v.(int64)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Decimal32Builder:
		b.Append(decimal.Decimal32(v.(int)))
	case *array.Decimal64Builder:
		b.Append(decimal.Decimal64(v.(int)))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(int64(v.(int))))
	case *array.Decimal256Builder:
		b.Append(decimal256.FromI64(int64(v.(int))))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.StringViewBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder: // binary and large binary
		b.Append(v.([]byte))
	case *array.BinaryViewBuilder:
		b.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	default:
		t.Fatalf("no builder case for %s", dt)
	}
	return b.NewArray()
}

func TestSpecVectors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	inst := specInst.UnixMicro()
	cases := []struct {
		dt   arrow.DataType
		v    any
		want int32
	}{
		{arrow.PrimitiveTypes.Int32, 34, specInt},
		{arrow.PrimitiveTypes.Int64, 34, specInt},
		{arrow.PrimitiveTypes.Int8, 34, specInt},
		{arrow.PrimitiveTypes.Int16, 34, specInt},
		{arrow.PrimitiveTypes.Uint8, 34, specInt},
		{arrow.PrimitiveTypes.Uint16, 34, specInt},
		{arrow.PrimitiveTypes.Uint32, 34, specInt},
		{&arrow.Decimal32Type{Precision: 4, Scale: 2}, 1420, specDecimal},
		{&arrow.Decimal64Type{Precision: 4, Scale: 2}, 1420, specDecimal},
		{&arrow.Decimal128Type{Precision: 4, Scale: 2}, 1420, specDecimal},
		{&arrow.Decimal256Type{Precision: 4, Scale: 2}, 1420, specDecimal},
		{arrow.FixedWidthTypes.Date32, specDay, specDate},
		{arrow.FixedWidthTypes.Date64, specDay * 86_400_000, specDate},
		{arrow.FixedWidthTypes.Time32s, specTOD / 1e6, specTime},
		{arrow.FixedWidthTypes.Time32ms, specTOD / 1e3, specTime},
		{arrow.FixedWidthTypes.Time64us, specTOD, specTime},
		{arrow.FixedWidthTypes.Time64ns, specTOD * 1e3, specTime},
		{ts(arrow.Second, ""), inst / 1e6, specTimestamp},
		{ts(arrow.Millisecond, ""), inst / 1e3, specTimestamp},
		{ts(arrow.Microsecond, ""), inst, specTimestamp},
		{ts(arrow.Nanosecond, ""), inst * 1e3, specTimestamp},
		// timestamptz 2017-11-16T14:31:08-08:00: Arrow stores the instant
		// in UTC whatever the zone, so the hash ignores TimeZone.
		{ts(arrow.Microsecond, "UTC"), inst, specTimestamp},
		{ts(arrow.Microsecond, "-08:00"), time.Date(2017, 11, 16, 14, 31, 8, 0, time.FixedZone("", -8*3600)).UnixMicro(), specTimestamp},
		{ts(arrow.Nanosecond, "America/Los_Angeles"), inst * 1e3, specTimestamp},
		{arrow.BinaryTypes.String, "iceberg", specString},
		{arrow.BinaryTypes.LargeString, "iceberg", specString},
		{arrow.BinaryTypes.StringView, "iceberg", specString},
		{arrow.BinaryTypes.Binary, specBytes, specBinary},
		{arrow.BinaryTypes.LargeBinary, specBytes, specBinary},
		{arrow.BinaryTypes.BinaryView, specBytes, specBinary},
		{&arrow.FixedSizeBinaryType{ByteWidth: 4}, specBytes, specBinary},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, specUUIDb[:], specUUID},
	}
	for _, c := range cases {
		arr := oneValue(t, mem, c.dt, c.v)
		h, ok := Hash(arr, 0)
		if !ok || int32(h) != c.want {
			t.Errorf("%s %v: hash %d, %v; want %d", c.dt, c.v, int32(h), ok, c.want)
		}
		arr.Release()
	}
	// The spec's hash functions, spelled out.
	if h := int32(hashLong(34)); h != specInt {
		t.Errorf("hashLong(34) = %d", h)
	}
}

func TestSpecBuckets(t *testing.T) {
	// From the Iceberg verification suite: bucket[100] of int 34 and of
	// decimal(9,2) 14.20.
	if b := Of(u32(specInt), 100); b != 79 {
		t.Errorf("bucket[100](34) = %d, want 79", b)
	}
	if b := Of(u32(specDecimal), 100); b != 59 {
		t.Errorf("bucket[100](14.20) = %d, want 59", b)
	}
	// A negative hash keeps its low 31 bits rather than being negated.
	if b := Of(0xffffffff, 1000); b != int32(0x7fffffff%1000) {
		t.Errorf("Of(0xffffffff) = %d", b)
	}
}

// u32 reinterprets a signed reference hash.
func u32(h int32) uint32 { return uint32(h) }

func TestUUIDExtension(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	storage := oneValue(t, mem, &arrow.FixedSizeBinaryType{ByteWidth: 16}, specUUIDb[:])
	defer storage.Release()
	arr := array.NewExtensionArrayWithStorage(newTestUUIDType(), storage)
	defer arr.Release()
	if h, ok := Hash(arr, 0); !ok || int32(h) != specUUID {
		t.Errorf("uuid extension: hash %d, %v; want %d", int32(h), ok, specUUID)
	}
}

// testUUIDType is a uuid extension over fixed_size_binary(16), as arrow-go's
// extensions.UUIDType is; that package pulls in parquet, so tests define
// their own.
type testUUIDType struct{ arrow.ExtensionBase }

type testUUIDArray struct{ array.ExtensionArrayBase }

func newTestUUIDType() *testUUIDType {
	return &testUUIDType{arrow.ExtensionBase{Storage: &arrow.FixedSizeBinaryType{ByteWidth: 16}}}
}

func (*testUUIDType) ArrayType() reflect.Type { return reflect.TypeOf(testUUIDArray{}) }
func (*testUUIDType) ExtensionName() string   { return "lakestream.test.uuid" }
func (*testUUIDType) Serialize() string       { return "" }
func (t *testUUIDType) ExtensionEquals(o arrow.ExtensionType) bool {
	return o.ExtensionName() == t.ExtensionName()
}
func (t *testUUIDType) Deserialize(arrow.DataType, string) (arrow.ExtensionType, error) {
	return t, nil
}

func TestMinimalBytes(t *testing.T) {
	cases := []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{-1, []byte{0xff}},
		{127, []byte{0x7f}},
		{128, []byte{0x00, 0x80}},
		{-128, []byte{0x80}},
		{-129, []byte{0xff, 0x7f}},
		{1420, []byte{0x05, 0x8c}},
		{-1420, []byte{0xfa, 0x74}},
	}
	var scratch [32]byte
	for _, c := range cases {
		if got := decimalBytes64(&scratch, c.v); !slices.Equal(got, c.want) {
			t.Errorf("%d: % x, want % x", c.v, got, c.want)
		}
	}
	// Wide values against math/big, whose two's complement encoding is
	// written out here as Java's BigInteger.toByteArray defines it.
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var w [4]uint64
		for i := range w {
			w[i] = r.Uint64()
		}
		// Shorten some values so every length is exercised.
		shift := r.IntN(256)
		x := wordsToBig(w)
		x.Rsh(x, uint(shift))
		w = bigToWords(x)
		if got, want := decimalBytes256(&scratch, w), javaBytes(x); !slices.Equal(got, want) {
			t.Fatalf("256-bit %s: % x, want % x", x, got, want)
		}
		if x.BitLen() < 127 {
			n := decimal128.FromBigInt(x)
			if got, want := decimalBytes128(&scratch, n.HighBits(), n.LowBits()), javaBytes(x); !slices.Equal(got, want) {
				t.Fatalf("128-bit %s: % x, want % x", x, got, want)
			}
		}
	}
}

// wordsToBig reads four little-endian-ordered 64-bit words as a signed
// 256-bit integer.
func wordsToBig(w [4]uint64) *big.Int {
	var b [32]byte
	for i := range 4 {
		binary.BigEndian.PutUint64(b[8*i:], w[3-i])
	}
	x := new(big.Int).SetBytes(b[:])
	if b[0] >= 0x80 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), 256))
	}
	return x
}

func bigToWords(x *big.Int) [4]uint64 {
	m := new(big.Int).Set(x)
	if m.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), 256))
	}
	var b [32]byte
	m.FillBytes(b[:])
	var w [4]uint64
	for i := range 4 {
		w[3-i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return w
}

// javaBytes is BigInteger.toByteArray: the shortest big-endian two's
// complement form, with room for the sign bit.
func javaBytes(x *big.Int) []byte {
	n := x.BitLen()/8 + 1 // bytes for the magnitude plus a sign bit
	if x.Sign() < 0 {
		// -2^k needs only k+1 bits.
		n = new(big.Int).Add(x, big.NewInt(1)).BitLen()/8 + 1
	}
	m := new(big.Int).Set(x)
	if m.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	out := make([]byte, n)
	m.FillBytes(out)
	return out
}

// TestStream checks the streaming hash against murmur3 over the whole input,
// for every way of cutting it into pieces.
func TestStream(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		data := make([]byte, r.IntN(40))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		var s stream
		rest := data
		for len(rest) > 0 {
			if len(rest) >= 8 && r.IntN(3) == 0 {
				s.writeLong(int64(binary.LittleEndian.Uint64(rest)))
				rest = rest[8:]
				continue
			}
			k := r.IntN(len(rest) + 1)
			if r.IntN(2) == 0 {
				write(&s, rest[:k])
			} else {
				write(&s, string(rest[:k]))
			}
			rest = rest[k:]
		}
		if got, want := s.sum(), murmur3.SeedSum32(0, data); got != want {
			t.Fatalf("% x: stream %d, murmur3 %d", data, got, want)
		}
	}
}

func TestHashLongIsMurmur3(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var b [8]byte
	for range 10000 {
		v := int64(r.Uint64()) >> r.IntN(64)
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		if got, want := hashLong(v), murmur3.SeedSum32(0, b[:]); got != want {
			t.Fatalf("hashLong(%d) = %d, murmur3 %d", v, got, want)
		}
	}
}

func TestFloorToMicros(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// 1.5 µs before the epoch is in microsecond -2, as Iceberg's floorDiv
	// has it; truncation would give -1.
	arr := oneValue(t, mem, &arrow.TimestampType{Unit: arrow.Nanosecond}, int64(-1500))
	defer arr.Release()
	if h, _ := Hash(arr, 0); h != hashLong(-2) {
		t.Errorf("timestamp[ns] -1500 hashes as %d, want hashLong(-2) = %d", h, hashLong(-2))
	}
	// A date64 that is not a whole day is cut to its day, as arrow-go's
	// pqarrow writes it.
	d := oneValue(t, mem, arrow.FixedWidthTypes.Date64, int64(-1))
	defer d.Release()
	if h, _ := Hash(d, 0); h != hashLong(0) {
		t.Errorf("date64 -1ms hashes as %d, want hashLong(0)", h)
	}
}
