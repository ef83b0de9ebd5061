package arrowmsg

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
)

const benchRows = 1 << 16

// BenchmarkAppendRecordBatch encodes benchRows rows of testSchema. Bytes
// are the uncompressed message size, so MB/s compares across codecs.
func BenchmarkAppendRecordBatch(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := buildRecord(b, mem, testSchema(), benchRows, 1)
	defer rec.Release()
	for _, codec := range codecs {
		b.Run(codec.String(), func(b *testing.B) {
			benchAppend(b, rec, bodyCodec{codec: codec, zstdLevel: defaultZstdLevel}, mem)
		})
	}
}

// BenchmarkAppendEvents encodes benchRows rows of eventSchema, data that
// compresses as ingested rows do, with each codec and the zstd levels
// worth considering. ratio is uncompressed over compressed message size.
func BenchmarkAppendEvents(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := buildEvents(b, mem, benchRows, 1)
	defer rec.Release()
	for _, c := range []struct {
		name string
		c    bodyCodec
	}{
		{"none", bodyCodec{codec: CodecNone}},
		{"lz4", bodyCodec{codec: CodecLZ4}},
		{"zstd-fastest", bodyCodec{codec: CodecZstd, zstdLevel: zstd.SpeedFastest}},
		{"zstd-default", bodyCodec{codec: CodecZstd, zstdLevel: zstd.SpeedDefault}},
	} {
		b.Run(c.name, func(b *testing.B) { benchAppend(b, rec, c.c, mem) })
	}
}

// benchAppend encodes rec into a reused dst. One call before the loop
// fills the encoder pool, so allocations are those of a steady stream.
func benchAppend(b *testing.B, rec arrow.RecordBatch, c bodyCodec, mem memory.Allocator) {
	size := len(encode(b, rec, CodecNone, mem))
	dst, err := appendRecordBatch(nil, rec, c, mem)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = appendRecordBatch(dst[:0], rec, c, mem); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(dst)), "msg-bytes")
	b.ReportMetric(float64(size)/float64(len(dst)), "ratio")
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
