package flightsrv_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// The scan benchmarks stream a table of benchBatches × benchBatchRows rows
// (id BIGINT, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ; about 2M rows)
// to one client, which fetches every endpoint in turn and decodes each
// record with arrow-go's flight.NewRecordReader. Throughput (MB/s) is of
// the uncompressed Arrow data, the same bytes for every codec.
//
// BenchmarkScan/codec=X also measures, interleaved iteration by iteration
// with the scan, the ceiling: a minimal arrow-go Flight server (BaseFlightServer,
// DoGet writing the same records from memory with flight.NewRecordWriter,
// uncompressed, one stream per bucket) read by the same client code. It
// reports the ratio as "x-ceiling" = scan throughput / ceiling throughput
// (1.0 = as fast as the ceiling; the Foundation issue asks for >= 0.8).
// Because that ceiling is uncompressed, the client decompresses only on
// the Lakestream side; "x-ceiling-same-codec" compares with the ceiling
// server sending the same batches pre-encoded with the table's codec, so
// both sides pay the same client decode. BenchmarkScanCeiling reports the
// ceilings alone, so the ratio can also be computed by hand: MB/s of
// BenchmarkScan/codec=X ÷ MB/s of BenchmarkScanCeiling/records.
//
//	go test -run '^$' -bench 'Scan' -benchtime 20x ./flightsrv/
const (
	benchBatches   = 31
	benchBatchRows = 64 << 10
	benchBuckets   = 4
)

var benchData = sync.OnceValues(func() ([]arrow.RecordBatch, int64) {
	recs := make([]arrow.RecordBatch, benchBatches)
	var size int64
	for i := range recs {
		recs[i] = benchRecord(i * benchBatchRows)
		size += arrowmsg.RecordBytes(recs[i])
	}
	return recs, size
})

// benchRecord builds benchBatchRows rows starting at id from.
func benchRecord(from int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, eventsSchema())
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	amounts := b.Field(1).(*array.Float64Builder)
	kinds := b.Field(2).(*array.StringBuilder)
	tss := b.Field(3).(*array.TimestampBuilder)
	kindNames := []string{"click", "view", "purchase", "refund", "add_to_cart", "checkout"}
	x := uint64(from)*2654435761 + 1
	for i := range benchBatchRows {
		id := int64(from + i)
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		ids.Append(id)
		amounts.Append(float64(x%100_000) / 100)
		kinds.Append(kindNames[x%uint64(len(kindNames))])
		tss.Append(arrow.Timestamp(1_700_000_000_000_000 + id*1000 + int64(x%1000)))
	}
	return b.NewRecordBatch()
}

// readTickets is the client side of every benchmark: DoGet each ticket in
// turn and decode every record. It returns the rows read.
func readTickets(ctx context.Context, cl flight.Client, tickets []*flight.Ticket) (int64, error) {
	var rows int64
	for _, tk := range tickets {
		stream, err := cl.DoGet(ctx, tk)
		if err != nil {
			return rows, err
		}
		rdr, err := flight.NewRecordReader(stream)
		if err != nil {
			return rows, err
		}
		for rdr.Next() {
			rows += rdr.RecordBatch().NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// ceiling is the reference server: records from memory. Ticket "i"
// writes records i, i+streams, ... with flight.NewRecordWriter,
// uncompressed; ticket "codec:i" sends the same records pre-encoded once
// with that codec (what Lakestream stores), as FlightData.
type ceiling struct {
	flight.BaseFlightServer
	schema  *arrow.Schema
	recs    []arrow.RecordBatch
	streams int
	encoded map[string][]*flight.FlightData
}

func (c *ceiling) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	codec, idx, found := strings.Cut(string(tk.GetTicket()), ":")
	if !found {
		codec, idx = "", codec
	}
	first, err := strconv.Atoi(idx)
	if err != nil {
		return err
	}
	if codec != "" {
		p := ipc.GetSchemaPayload(c.schema, memory.DefaultAllocator)
		meta := p.Meta()
		err := stream.Send(&flight.FlightData{DataHeader: meta.Bytes()})
		meta.Release()
		p.Release()
		if err != nil {
			return err
		}
		frames := c.encoded[codec]
		for i := first; i < len(frames); i += c.streams {
			if err := stream.Send(frames[i]); err != nil {
				return err
			}
		}
		return nil
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(c.schema))
	defer w.Close()
	for i := first; i < len(c.recs); i += c.streams {
		if err := w.Write(c.recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// startCeiling serves recs from a minimal Flight server and returns a
// client and its tickets; tickets for pre-encoded batches are made by
// ceilingTickets.
func startCeiling(b *testing.B, recs []arrow.RecordBatch) flight.Client {
	b.Helper()
	c := &ceiling{schema: recs[0].Schema(), recs: recs, streams: benchBuckets, encoded: map[string][]*flight.FlightData{}}
	for name, codec := range map[string]arrowmsg.Codec{"none": arrowmsg.CodecNone, "lz4": arrowmsg.CodecLZ4, "zstd": arrowmsg.CodecZstd} {
		for _, r := range recs {
			msg, err := arrowmsg.AppendRecordBatch(nil, r, codec, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			meta, body, err := arrowmsg.SplitMessage(msg)
			if err != nil {
				b.Fatal(err)
			}
			c.encoded[name] = append(c.encoded[name], &flight.FlightData{DataHeader: meta, DataBody: body})
		}
	}
	g := grpc.NewServer(grpc.MaxRecvMsgSize(256<<20), grpc.MaxSendMsgSize(256<<20))
	flight.RegisterFlightServiceServer(g, c)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Serve(lis)
	}()
	cl, err := flight.NewClientWithMiddleware(lis.Addr().String(), nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cl.Close()
		g.Stop()
		<-done
	})
	return cl
}

// ceilingTickets are the ceiling's tickets: uncompressed records written
// per read for codec "", else the batches pre-encoded with codec.
func ceilingTickets(codec string) []*flight.Ticket {
	tickets := make([]*flight.Ticket, benchBuckets)
	for i := range tickets {
		t := strconv.Itoa(i)
		if codec != "" {
			t = codec + ":" + t
		}
		tickets[i] = &flight.Ticket{Ticket: []byte(t)}
	}
	return tickets
}

// startBenchTable serves a Lakestream table of the benchmark rows with the
// given codec, on the OS filesystem, keyless with benchBuckets buckets so
// every stored batch is one whole 64k-row record.
func startBenchTable(b *testing.B, codec string) *testServer {
	b.Helper()
	recs, _ := benchData()
	ts := startServer(b, serverConfig{dir: b.TempDir(), goMem: true})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='" + strconv.Itoa(benchBuckets) + "', 'log.compression'='" + codec + "')")
	for _, r := range recs {
		r.Retain() // mustIngest releases
	}
	if n := ts.mustIngest("ev", "append", recs...); n != benchBatches*benchBatchRows {
		b.Fatalf("ingested %d rows", n)
	}
	return ts
}

// scanTable plans SELECT * and reads every endpoint.
func scanTable(ctx context.Context, ts *testServer) (int64, error) {
	info, err := ts.cl.Execute(ctx, "SELECT * FROM ev")
	if err != nil {
		return 0, err
	}
	tickets := make([]*flight.Ticket, len(info.GetEndpoint()))
	for i, ep := range info.GetEndpoint() {
		tickets[i] = ep.GetTicket()
	}
	return readTickets(ctx, ts.cl.Client, tickets)
}

func BenchmarkScan(b *testing.B) {
	recs, size := benchData()
	ccl := startCeiling(b, recs)
	const want = benchBatches * benchBatchRows
	for _, codec := range []string{"none", "lz4", "zstd"} {
		b.Run("codec="+codec, func(b *testing.B) {
			ts := startBenchTable(b, codec)
			ctx := context.Background()
			plain, same := ceilingTickets(""), ceilingTickets(codec)
			ceilingRead := func(tickets []*flight.Ticket) time.Duration {
				start := time.Now()
				n, err := readTickets(ctx, ccl, tickets)
				if err != nil || n != want {
					b.Fatalf("ceiling: %d rows, %v", n, err)
				}
				return time.Since(start)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			var plainTime, sameTime time.Duration
			b.ResetTimer()
			for range b.N {
				n, err := scanTable(ctx, ts)
				if err != nil || n != want {
					b.Fatalf("scan: %d rows, %v", n, err)
				}
				// The ceilings, side by side, outside the timer.
				b.StopTimer()
				plainTime += ceilingRead(plain)
				sameTime += ceilingRead(same)
				b.StartTimer()
			}
			b.StopTimer()
			scanTime := b.Elapsed()
			mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / 1e6 / d.Seconds() }
			b.ReportMetric(float64(plainTime)/float64(scanTime), "x-ceiling")
			b.ReportMetric(mbps(plainTime), "ceiling-MB/s")
			b.ReportMetric(float64(sameTime)/float64(scanTime), "x-ceiling-same-codec")
		})
	}
}

func BenchmarkScanCeiling(b *testing.B) {
	recs, size := benchData()
	cl := startCeiling(b, recs)
	for _, codec := range []string{"", "none", "lz4", "zstd"} {
		name := "records"
		if codec != "" {
			name = "encoded=" + codec
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			tickets := ceilingTickets(codec)
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				n, err := readTickets(ctx, cl, tickets)
				if err != nil || n != benchBatches*benchBatchRows {
					b.Fatalf("ceiling: %d rows, %v", n, err)
				}
			}
		})
	}
}
