package arrowmsg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

var codecs = []Codec{CodecNone, CodecLZ4, CodecZstd}

// testSchema covers every layout kind the package handles.
func testSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Nullable: true},
		{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "time", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "tsutc", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "struct", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		), Nullable: true},
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
}

// buildRecord makes rows pseudo-random rows, about one value in six null.
func buildRecord(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows int, seed uint64) arrow.RecordBatch {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for range rows {
		for i, fb := range b.Fields() {
			appendValue(t, fb, r, schema.Field(i).Nullable)
		}
	}
	return b.NewRecordBatch()
}

// appendValue appends one random value (or null, when nullable) to b.
func appendValue(t testing.TB, b array.Builder, r *rand.Rand, nullable bool) {
	if nullable && r.IntN(6) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.Int8Builder:
		b.Append(int8(r.Int32()))
	case *array.Int16Builder:
		b.Append(int16(r.Int32()))
	case *array.Int32Builder:
		b.Append(r.Int32())
	case *array.Int64Builder:
		b.Append(r.Int64N(1000))
	case *array.Float32Builder:
		b.Append(r.Float32())
	case *array.Float64Builder:
		b.Append(r.Float64())
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(r.Int64N(1e15)))
	case *array.StringBuilder:
		b.Append(fmt.Sprintf("value-%d", r.IntN(50)))
	case *array.BinaryBuilder:
		b.Append(bytes.Repeat([]byte{byte(r.IntN(256))}, r.IntN(9)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(r.Int32N(30000)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(r.Int64N(86400e6)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(r.Int64N(1 << 52)))
	default:
		appendNested(t, b, r)
	}
}

func appendNested(t testing.TB, b array.Builder, r *rand.Rand) {
	switch b := b.(type) {
	case *array.MapBuilder:
		b.Append(true)
		for k := range r.IntN(4) {
			b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", k))
			appendValue(t, b.ItemBuilder(), r, true)
		}
	case *array.ListBuilder:
		b.Append(true)
		for range r.IntN(5) {
			appendValue(t, b.ValueBuilder(), r, true)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i := range b.NumField() {
			appendValue(t, b.FieldBuilder(i), r, true)
		}
	default:
		t.Fatalf("no test values for builder %T", b)
	}
}

// encode is AppendRecordBatch into a fresh slice.
func encode(t testing.TB, rec arrow.RecordBatch, codec Codec, mem memory.Allocator) []byte {
	t.Helper()
	msg, err := AppendRecordBatch(nil, rec, codec, mem)
	if err != nil {
		t.Fatalf("AppendRecordBatch(%v): %v", codec, err)
	}
	return msg
}

// decode reads one encapsulated message with arrow-go, framed as a stream:
// the schema message, msg, an end-of-stream marker. The caller releases the
// batch.
func decode(t testing.TB, mem memory.Allocator, schema *arrow.Schema, msg []byte) arrow.RecordBatch {
	t.Helper()
	var stream bytes.Buffer
	sp := ipc.GetSchemaPayload(schema, mem)
	if _, err := sp.WritePayload(&stream); err != nil {
		t.Fatalf("write schema payload: %v", err)
	}
	sp.Release()
	stream.Write(msg)
	stream.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})

	rdr, err := ipc.NewReader(&stream, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatalf("ipc.NewReader: %v", err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("ipc reader found no batch: %v", rdr.Err())
	}
	rec := rdr.RecordBatch()
	rec.Retain()
	if rdr.Next() {
		rec.Release()
		t.Fatalf("ipc reader found a second batch")
	}
	if err := rdr.Err(); err != nil {
		rec.Release()
		t.Fatalf("ipc reader: %v", err)
	}
	return rec
}

// checkedMem returns a leak-checking allocator, checked when t ends.
func checkedMem(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// craft lays out raw buffers as a body (prefixed with -1, "stored
// uncompressed", when compressed) and returns the metadata and body of a
// message with the given nodes, built by this package's own builder.
func craft(length int64, nodes []FieldNode, codec Codec, raw ...[]byte) (meta, body []byte) {
	hdr := &RecordBatchHeader{Version: metadataV5, Length: length, Nodes: nodes, Codec: codec}
	for _, r := range raw {
		if codec != CodecNone && len(r) > 0 {
			r = append(binary.LittleEndian.AppendUint64(nil, math.MaxUint64), r...) // -1
		}
		hdr.Buffers = append(hdr.Buffers, Buffer{Offset: int64(len(body)), Length: int64(len(r))})
		body = append(body, r...)
		body = append(body, make([]byte, align8(int64(len(r)))-int64(len(r)))...)
	}
	hdr.BodyLength = int64(len(body))
	return remeta(hdr), body
}

// remeta builds hdr's flatbuffer into a slice of its own.
func remeta(hdr *RecordBatchHeader) []byte {
	return bytes.Clone(buildMessage(flatbuffers.NewBuilder(0), hdr))
}

// frame returns the encapsulated message of meta and body.
func frame(t testing.TB, meta, body []byte) []byte {
	t.Helper()
	msg, err := appendFrame(nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	return append(msg, body...)
}
