package flightsrv_test

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// A scan forwards the stored compression by default; the
// lakestream-compression header, or a grpc-java user agent without it,
// gets every batch uncompressed with the same rows, projections and
// batches of an older schema version included.
func TestScanPlainOnRequest(t *testing.T) {
	ts := startServer(t, serverConfig{})
	stored := map[string]arrowmsg.Codec{"zstd": arrowmsg.CodecZstd, "lz4": arrowmsg.CodecLZ4, "none": arrowmsg.CodecNone}
	var want []string
	for _, r := range eventRows(t, 0, 300) {
		want = append(want, r+"|(null)")
	}
	more := eventRows(t, 300, 2)
	want = append(want, more[0]+"|a", more[1]+"|b")
	for codec := range stored {
		name := "ev_" + codec
		ts.mustExec("CREATE TABLE " + name + " " + eventsCols + " WITH ('bucket.num'='2', 'log.compression'='" + codec + "')")
		ts.mustIngest(name, "append", events(t, 0, 100), events(t, 100, 100), events(t, 200, 100))
		// Batches written before ADD COLUMN take the re-encoding path.
		ts.mustExec("ALTER TABLE " + name + " ADD COLUMN note VARCHAR")
		ts.mustIngest(name, "append", addColumn(t, events(t, 300, 2), str("note", "a", "b")))
	}
	java := dialUserAgent(t, ts.addr, "grpc-java-netty/1.70.0")

	for _, tc := range []struct {
		name   string
		cl     *flightsql.Client
		header []string
		plain  bool
	}{
		{"default", ts.cl, nil, false},
		{"header none", ts.cl, []string{"none"}, true},
		{"header NONE spaced", ts.cl, []string{" NONE "}, true},
		{"header stored", ts.cl, []string{"stored"}, false},
		{"header repeated", ts.cl, []string{"none", "none"}, true},
		{"grpc-java user agent", java, nil, true},
		{"grpc-java user agent, header stored", java, []string{"stored"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for codec, c := range stored {
				wantCodec := c
				if tc.plain {
					wantCodec = arrowmsg.CodecNone
				}
				for _, q := range []struct {
					sql  string
					cols []int
				}{{"SELECT * FROM ev_" + codec, nil}, {"SELECT note, id FROM ev_" + codec, []int{4, 0}}} {
					info := ts.mustExec(q.sql)
					rows, codecs := fetchRaw(t, tc.cl, info, tc.header)
					wantRows := want
					if q.cols != nil {
						wantRows = project(want, q.cols)
					}
					sameRows(t, q.sql, rows, wantRows)
					if len(codecs) == 0 {
						t.Fatalf("%s: no record batches", q.sql)
					}
					for _, got := range codecs {
						if got != wantCodec {
							t.Errorf("%s: batch sent with %v, want %v (all: %v)", q.sql, got, wantCodec, codecs)
							break
						}
					}
				}
			}
		})
	}
}

// A value of the header that is neither none nor stored is refused with
// InvalidArgument naming the header, before anything is sent, and the
// server keeps serving.
func TestScanCompressionHeaderRefused(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('log.compression'='zstd')")
	ts.mustIngest("ev", "append", events(t, 0, 10))
	info := ts.mustExec("SELECT * FROM ev")
	for _, header := range [][]string{{"gzip"}, {""}, {"none", "stored"}} {
		ctx := metadata.NewOutgoingContext(testCtx(t), metadata.MD{flightsrv.CompressionHeader: header})
		rdr, err := ts.cl.DoGet(ctx, info.GetEndpoint()[0].GetTicket())
		if err == nil {
			for rdr.Next() {
			}
			err = rdr.Err()
			rdr.Release()
		}
		expectCode(t, err, codes.InvalidArgument, flightsrv.CompressionHeader)
	}
	if got := ts.count("ev"); got != 10 {
		t.Errorf("after refused headers: %d rows", got)
	}
}

// dialUserAgent connects a client that announces ua, as grpc-java does.
// grpc-go appends its own name: the server sees "ua grpc-go/x.y.z".
func dialUserAgent(t testing.TB, addr, ua string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(ua))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// fetchRaw reads every endpoint of info with the compression header set to
// header (none when nil) and returns the rows and the body compression of
// each record batch message as it came off the wire.
func fetchRaw(t *testing.T, cl *flightsql.Client, info *flight.FlightInfo, header []string) ([]string, []arrowmsg.Codec) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := testCtx(t)
	if header != nil {
		ctx = metadata.NewOutgoingContext(ctx, metadata.MD{flightsrv.CompressionHeader: header})
	}
	var rows []string
	rec := &codecRecorder{t: t}
	for i, ep := range info.GetEndpoint() {
		stream, err := cl.Client.DoGet(ctx, ep.GetTicket())
		if err != nil {
			t.Fatalf("DoGet endpoint %d: %v", i, err)
		}
		rec.stream = stream
		rdr, err := flight.NewRecordReader(rec, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		for rdr.Next() {
			if err := array.ValidateRecordFull(rdr.RecordBatch()); err != nil {
				t.Fatalf("endpoint %d: invalid record: %v", i, err)
			}
			rows = append(rows, rowStrings(rdr.RecordBatch())...)
		}
		if err := rdr.Err(); err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		rdr.Release()
	}
	return rows, slices.Clip(rec.codecs)
}

// codecRecorder passes a DoGet stream through and notes the codec of each
// record batch message.
type codecRecorder struct {
	t      *testing.T
	stream flight.FlightService_DoGetClient
	codecs []arrowmsg.Codec
}

func (r *codecRecorder) Recv() (*flight.FlightData, error) {
	fd, err := r.stream.Recv()
	if err != nil {
		return fd, err
	}
	if k, err := arrowmsg.MessageKind(fd.GetDataHeader()); err != nil {
		r.t.Errorf("message header: %v", err)
	} else if k == arrowmsg.KindRecordBatch {
		hdr, err := arrowmsg.ParseRecordBatch(fd.GetDataHeader())
		if err != nil {
			r.t.Errorf("record batch header: %v", err)
		} else {
			r.codecs = append(r.codecs, hdr.Codec)
		}
	}
	return fd, nil
}
