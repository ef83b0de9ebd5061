package arrowmsg

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

const benchRows = 1 << 16

// BenchmarkAppendRecordBatch encodes benchRows rows of testSchema. Bytes
// are the uncompressed message size, so MB/s compares across codecs.
func BenchmarkAppendRecordBatch(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := buildRecord(b, mem, testSchema(), benchRows, 1)
	defer rec.Release()
	size := len(encode(b, rec, CodecNone, mem))
	for _, codec := range codecs {
		b.Run(codec.String(), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				var err error
				dst, err = AppendRecordBatch(dst[:0], rec, codec, mem)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(dst)), "msg-bytes")
		})
	}
}

// BenchmarkProject keeps 4 of 17 columns (flat and nested) of a benchRows
// batch. Bytes are the input message's body: what a server would otherwise
// decode to serve the subset.
func BenchmarkProject(b *testing.B) {
	mem := memory.NewGoAllocator()
	schema := testSchema()
	rec := buildRecord(b, mem, schema, benchRows, 1)
	defer rec.Release()
	cols := []int{colMap, colAmount, colStr, colStruct}
	for _, codec := range codecs {
		meta, body, err := SplitMessage(encode(b, rec, codec, mem))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(codec.String()+"/Project", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Project(schema, cols, meta, body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(codec.String()+"/ProjectAppend", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				if dst, err = ProjectAppend(dst[:0], schema, cols, meta, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
