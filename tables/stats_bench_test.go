package tables

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// benchEvents builds n event rows in time order: id int64, amount float64
// (null every 50th), kind string (one of 12 values), ts timestamp[us] one
// millisecond apart with jitter.
func benchEvents(mem memory.Allocator, n int, startID int64, startTS int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	kinds := make([]string, 12)
	for i := range kinds {
		kinds[i] = fmt.Sprintf("event-kind-%02d", i)
	}
	rng := rand.New(rand.NewPCG(uint64(startID), 1))
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	amounts := b.Field(1).(*array.Float64Builder)
	ks := b.Field(2).(*array.StringBuilder)
	tss := b.Field(3).(*array.TimestampBuilder)
	for i := range n {
		id := startID + int64(i)
		ids.Append(id)
		if id%50 == 49 {
			amounts.AppendNull()
		} else {
			amounts.Append(float64(rng.IntN(100_000)) / 100)
		}
		ks.Append(kinds[rng.IntN(len(kinds))])
		tss.Append(arrow.Timestamp(startTS + id*1000 + rng.Int64N(500)))
	}
	return b.NewRecordBatch()
}

// BenchmarkEncodeBatch: one 64Ki-row event batch compressed into a log
// batch by encodeBatch, with its statistics, and, interleaved in the same
// loop so that machine noise hits both alike, the same batch encoded
// without them (the encoding before statistics existed). stats-% is the
// difference relative to the encode without statistics.
func BenchmarkEncodeBatch(b *testing.B) {
	rec := benchEvents(memory.DefaultAllocator, 64*1024, 0, 1_700_000_000_000_000)
	defer rec.Release()
	for _, codec := range []arrowmsg.Codec{arrowmsg.CodecZstd, arrowmsg.CodecLZ4} {
		b.Run(codec.String(), func(b *testing.B) {
			var with, without time.Duration
			encodes := []func() (columnarlog.Batch, error){
				func() (columnarlog.Batch, error) {
					return encodeBatch(rec, 1, Writer{}, codec, memory.DefaultAllocator)
				},
				func() (columnarlog.Batch, error) { return encodeWithoutStats(rec, codec) },
			}
			took := []*time.Duration{&with, &without}
			i := 0
			for b.Loop() {
				// Alternate which goes first: the second finds the record
				// in cache.
				for j := range 2 {
					k := (i + j) % 2
					start := time.Now()
					if _, err := encodes[k](); err != nil {
						b.Fatal(err)
					}
					*took[k] += time.Since(start)
				}
				i++
			}
			b.ReportMetric(float64(with.Microseconds())/1e3/float64(b.N), "with-ms/op")
			b.ReportMetric(float64(without.Microseconds())/1e3/float64(b.N), "without-ms/op")
			b.ReportMetric(100*float64(with-without)/float64(without), "stats-%")
		})
	}
}

// encodeWithoutStats is encodeBatch as it was before batches carried
// statistics.
func encodeWithoutStats(rec arrow.RecordBatch, codec arrowmsg.Codec) (columnarlog.Batch, error) {
	buf, start := columnarlog.StartBatch(nil)
	buf, err := arrowmsg.AppendRecordBatch(buf, rec, codec, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	return columnarlog.FinishBatch(buf[start:], columnarlog.Header{
		Codec:       columnarlog.Codec(codec),
		SchemaID:    1,
		RecordCount: int32(rec.NumRows()),
	})
}

// BenchmarkComputeStats: the statistics pass alone over the same batch,
// per column and in all, to set against BenchmarkEncodeBatch.
func BenchmarkComputeStats(b *testing.B) {
	rec := benchEvents(memory.DefaultAllocator, 64*1024, 0, 1_700_000_000_000_000)
	defer rec.Release()
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			computeStats(rec)
		}
	})
	for i, f := range rec.Schema().Fields() {
		b.Run(f.Name, func(b *testing.B) {
			for b.Loop() {
				columnStats(rec.Column(i))
			}
		})
	}
}
