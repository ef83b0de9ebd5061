package arrowmsg

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

func TestRoundTrip(t *testing.T) {
	schema := testSchema()
	for _, codec := range codecs {
		for _, rows := range []int{0, 1, 7, 300} {
			t.Run(fmt.Sprintf("%v/rows=%d", codec, rows), func(t *testing.T) {
				mem := checkedMem(t)
				rec := buildRecord(t, mem, schema, rows, uint64(rows))
				defer rec.Release()
				checkRoundTrip(t, rec, codec)
			})
		}
	}
}

// A sliced batch has non-zero array offsets, which arrow-go's writer
// truncates; the message must still describe exactly the slice.
func TestRoundTripSlice(t *testing.T) {
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			mem := checkedMem(t)
			rec := buildRecord(t, mem, testSchema(), 200, 3)
			defer rec.Release()
			slice := rec.NewSlice(37, 151)
			defer slice.Release()
			checkRoundTrip(t, slice, codec)
		})
	}
}

func checkRoundTrip(t *testing.T, rec arrow.RecordBatch, codec Codec) {
	t.Helper()
	mem := checkedMem(t)
	prefix := []byte("xyz")
	msg, err := AppendRecordBatch(bytes.Clone(prefix), rec, codec, mem)
	if err != nil {
		t.Fatalf("AppendRecordBatch: %v", err)
	}
	if !bytes.Equal(msg[:len(prefix)], prefix) {
		t.Fatalf("AppendRecordBatch overwrote dst")
	}
	msg = msg[len(prefix):]

	meta, body, err := SplitMessage(msg)
	if err != nil {
		t.Fatalf("SplitMessage: %v", err)
	}
	if len(meta)%8 != 0 || len(body)%8 != 0 {
		t.Errorf("metadata %d and body %d bytes are not 8-byte multiples", len(meta), len(body))
	}
	hdr, err := Validate(rec.Schema(), meta, body, Limits{})
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	checkHeader(t, hdr, rec, codec)

	got := decode(t, mem, rec.Schema(), msg)
	defer got.Release()
	if !array.RecordEqual(rec, got) {
		t.Fatalf("decoded batch differs:\nwant %v\ngot  %v", rec, got)
	}
}

func checkHeader(t *testing.T, hdr *RecordBatchHeader, rec arrow.RecordBatch, codec Codec) {
	t.Helper()
	if hdr.Length != rec.NumRows() || hdr.Codec != codec || hdr.Version != metadataV5 {
		t.Errorf("header length %d codec %v version %d, want %d %v %d",
			hdr.Length, hdr.Codec, hdr.Version, rec.NumRows(), codec, metadataV5)
	}
	for i, b := range hdr.Buffers {
		if b.Offset%8 != 0 {
			t.Errorf("buffer %d at offset %d is not 8-byte aligned", i, b.Offset)
		}
	}
}

func TestAppendRecordBatchRejects(t *testing.T) {
	mem := checkedMem(t)
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dictType}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	rec := b.NewRecordBatch()
	defer rec.Release()
	dst := []byte("keep")
	out, err := AppendRecordBatch(dst, rec, CodecNone, mem)
	if err == nil || !errors.Is(err, ErrUnsupported) || string(out) != "keep" {
		t.Fatalf("dictionary column: got %q, %v; want dst unchanged and ErrUnsupported", out, err)
	}

	rec2 := buildRecord(t, mem, testSchema(), 3, 1)
	defer rec2.Release()
	if _, err := AppendRecordBatch(nil, rec2, Codec(9), mem); err == nil {
		t.Fatalf("unknown codec: no error")
	}
}

func TestLayout(t *testing.T) {
	cases := []struct {
		dt             arrow.DataType
		nodes, buffers int
	}{
		{arrow.Null, 1, 0},
		{arrow.FixedWidthTypes.Boolean, 1, 2},
		{arrow.PrimitiveTypes.Uint64, 1, 2},
		{&arrow.Decimal128Type{Precision: 18, Scale: 3}, 1, 2},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, 1, 2},
		{arrow.FixedWidthTypes.MonthDayNanoInterval, 1, 2},
		{arrow.FixedWidthTypes.Duration_ms, 1, 2},
		{arrow.BinaryTypes.LargeString, 1, 3},
		{arrow.ListOf(arrow.BinaryTypes.String), 2, 5},
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int8), 2, 4},
		{arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int8), 2, 3},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String}), 3, 6},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), 4, 8},
		{arrow.StructOf(), 1, 1},
	}
	for _, c := range cases {
		n, b, err := Layout(c.dt)
		if err != nil || n != c.nodes || b != c.buffers {
			t.Errorf("Layout(%s) = %d, %d, %v; want %d, %d", c.dt, n, b, err, c.nodes, c.buffers)
		}
	}
	unsupportedTypes := []arrow.DataType{
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String},
		arrow.SparseUnionOf(nil, nil),
		arrow.BinaryTypes.StringView,
		arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int8),
		arrow.ListViewOf(arrow.PrimitiveTypes.Int8),
		arrow.StructOf(arrow.Field{Name: "v", Type: arrow.BinaryTypes.BinaryView}),
	}
	for _, dt := range unsupportedTypes {
		if _, _, err := Layout(dt); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Layout(%s): err %v, want ErrUnsupported", dt, err)
		}
	}
}
