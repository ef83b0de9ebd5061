package arrowmsg

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// goldenRecord is a: int32 [1, null, 3], b: string ["x", "yz", null].
func goldenRecord(mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 0, 3}, []bool{true, false, true})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", "yz", ""}, []bool{true, true, false})
	return b.NewRecordBatch()
}

// unhex decodes hex written in annotated lines: everything after "//" on a
// line is a comment, spaces are ignored.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "//")
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad golden hex: %v", err)
	}
	return b
}

func checkGolden(t *testing.T, got []byte, want string) {
	t.Helper()
	if w := unhex(t, want); string(got) != string(w) {
		t.Fatalf("bytes changed: the wire format moved. got\n%s\nwant\n%s", hex.Dump(got), hex.Dump(w))
	}
}

// TestGoldenAppendRecordBatch pins an uncompressed message as arrow-go
// writes it and this package frames it. (Compressed bodies are not pinned:
// they change with the compressor's version, not with the format.)
func TestGoldenAppendRecordBatch(t *testing.T) {
	mem := checkedMem(t)
	rec := goldenRecord(mem)
	defer rec.Release()
	checkGolden(t, encode(t, rec, CodecNone, mem), goldenAppend)
}

// TestGoldenProject pins the flatbuffer this package builds itself. Its
// input is hand-made, LZ4-flagged with every buffer stored uncompressed
// (prefix -1), so the bytes do not depend on a compressor's version.
func TestGoldenProject(t *testing.T) {
	mem := checkedMem(t)
	rec := goldenRecord(mem)
	defer rec.Release()
	meta, body := craft(3, []FieldNode{{3, 1}, {3, 1}}, CodecLZ4,
		[]byte{0b101}, []byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0}, // a
		[]byte{0b011}, []byte{0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0}, []byte("xyz")) // b
	got, err := ProjectAppend(nil, rec.Schema(), []int{1, 0}, meta, body)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, got, goldenProject)

	dec := decode(t, mem, projectSchema(rec.Schema(), []int{1, 0}), got)
	defer dec.Release()
	if !array.Equal(dec.Column(0), rec.Column(1)) || !array.Equal(dec.Column(1), rec.Column(0)) {
		t.Fatalf("decoded projection differs: %v", dec)
	}
}

const goldenAppend = `
ffffffff // continuation marker
c8000000 // metadata length 200
// Message flatbuffer (arrow-go's), padded
1400000000000000 0c00160014001300
0c0004000c000000 3800000000000000
1400000000000003 04000a0018000c00
080004000a000000 1400000068000000
0300000000000000 0000000005000000
0000000000000000 0400000000000000
0800000000000000 0c00000000000000
1800000000000000 0100000000000000
2000000000000000 1000000000000000
3000000000000000 0300000000000000
0000000002000000 0300000000000000
0100000000000000 0300000000000000
0100000000000000
// body, 56 bytes
0500000000000000 // a validity 0b101
0100000000000000 // a values 1, 0, 3
0300000000000000
0300000000000000 // b validity 0b011
0000000001000000 // b offsets 0, 1, 3, 3
0300000003000000
78797a0000000000 // b data "xyz"
`

const goldenProject = `
ffffffff // continuation marker
d8000000 // metadata length 216
// Message flatbuffer (built here), padded
1400000000000000 0c00180016001500
100004000c000000 6000000000000000
0000000014000000 000304000c001c00
10000c0008000400 0c0000001c000000
1c00000070000000 0300000000000000
0000000004000400 0400000005000000
0000000000000000 0900000000000000
1000000000000000 1800000000000000
2800000000000000 0b00000000000000
3800000000000000 0900000000000000
4800000000000000 1400000000000000
0000000002000000 0300000000000000
0100000000000000 0300000000000000
0100000000000000
// body, 96 bytes: column b, then column a, each buffer prefixed with -1
ffffffffffffffff 0300000000000000 // b validity
ffffffffffffffff 0000000001000000 0300000003000000 // b offsets
ffffffffffffffff 78797a0000000000 // b data
ffffffffffffffff 0500000000000000 // a validity
ffffffffffffffff 0100000000000000 0300000000000000 // a values
`
