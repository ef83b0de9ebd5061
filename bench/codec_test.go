package bench

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// BenchmarkLogCodec measures what the log's codec costs on the benchmark's
// rows (data.go), as the log stores them: one message per bucket part,
// 1,024 rows (a 4,096-row call over 4 buckets) or 16,384 rows (65,536
// over 4). It reports, per codec, the encoding's and the decoding's CPU
// time per million rows (one core; the decoding, by arrow-go's IPC reader,
// is what a scan's client or a cold read does) and the stored bytes per row, the figures behind
// the default log.compression (docs/benchmarks.md):
//
//	go test -run '^$' -bench BenchmarkLogCodec -benchtime 20x ./bench/
func BenchmarkLogCodec(b *testing.B) {
	for _, rows := range []int{1024, 16384} {
		recs := batches(64*rows, rows)
		for _, c := range []arrowmsg.Codec{arrowmsg.CodecNone, arrowmsg.CodecLZ4, arrowmsg.CodecZstd} {
			msgs := make([][]byte, len(recs))
			var size int
			for i, r := range recs {
				m, err := arrowmsg.AppendRecordBatch(nil, r, c, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				msgs[i], size = m, size+len(m)
			}
			total := float64(len(recs) * rows)
			b.Run(fmt.Sprintf("rows=%d/codec=%s/encode", rows, c), func(b *testing.B) {
				var buf []byte
				cpu := startCPU(b)
				for b.Loop() {
					for _, r := range recs {
						var err error
						if buf, err = arrowmsg.AppendRecordBatch(buf[:0], r, c, memory.DefaultAllocator); err != nil {
							b.Fatal(err)
						}
					}
				}
				cpu(total)
				b.ReportMetric(float64(size)/total, "bytes/row")
			})
			b.Run(fmt.Sprintf("rows=%d/codec=%s/decode", rows, c), func(b *testing.B) {
				prefix := schemaPrefix(b)
				cpu := startCPU(b)
				for b.Loop() {
					for _, m := range msgs {
						rdr, err := ipc.NewReader(io.MultiReader(bytes.NewReader(prefix), bytes.NewReader(m)))
						if err != nil {
							b.Fatal(err)
						}
						if !rdr.Next() {
							b.Fatalf("no record: %v", rdr.Err())
						}
						rdr.Release()
					}
				}
				cpu(total)
			})
		}
		release(recs)
	}
}

// schemaPrefix is an IPC stream's schema message for the event rows: the
// stream a client reads before the batches.
func schemaPrefix(b *testing.B) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(eventsSchema))
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()[:buf.Len()-8] // without the end-of-stream marker
}

// startCPU starts counting the process's CPU time; the function it returns
// reports it per million of rows per op as "CPU-s/Mrows". CPU time, not
// the wall clock: on a loaded machine the two differ by the waits for a
// core.
func startCPU(b *testing.B) func(rows float64) {
	before, err := processCPU()
	if err != nil {
		b.Fatal(err)
	}
	return func(rows float64) {
		after, err := processCPU()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric((after-before).Seconds()/float64(b.N)/rows*1e6, "CPU-s/Mrows")
	}
}
