package flightsrv_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lakestream/lakestream/flightsrv"
)

// A client that stops reading, with gRPC's smallest flow-control windows,
// so that the server feels it after 64 KiB rather than after the 16 MiB a
// Go client's windows grow to; each has a connection of its own.
func dialStalling(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// streamServer serves ev: 100,000 rows stored uncompressed, 4 MB.
func streamServer(t *testing.T, opts flightsrv.Options) *testServer {
	ts := startServer(t, serverConfig{opts: opts})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('log.compression'='none')")
	recs := make([]arrow.RecordBatch, 20)
	for i := range recs {
		recs[i] = events(t, i*5000, 5000)
	}
	ts.mustIngest("ev", "append", recs...)
	return ts
}

// readAll reads a stream to its end and returns its rows and error.
func readAll(rdr *flight.Reader) (int64, error) {
	defer rdr.Release()
	var rows int64
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
	}
	return rows, rdr.Err()
}

// A scan and a subscription whose client stops reading are cut off after
// the stall timeout with ResourceExhausted naming it; the client gets what
// gRPC had queued, then the error. Once it has, nothing stays charged to
// the budget, and the server serves full reads.
func TestStalledStreamsAreCutOff(t *testing.T) {
	ts := streamServer(t, flightsrv.Options{StreamWindow: 256 << 10, StallTimeout: 300 * time.Millisecond})
	for i, sql := range []string{"SELECT * FROM ev", "SELECT * FROM changes('ev', 'earliest')"} {
		info := ts.mustExec(sql)
		rdr, err := dialStalling(t, ts.addr).DoGet(testCtx(t), info.GetEndpoint()[0].GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return ts.srv.StreamStats().Stalled == int64(i+1) })
		rows, err := readAll(rdr)
		expectCode(t, err, codes.ResourceExhausted, "the client read nothing for 300ms (the stall timeout)")
		if rows >= 100_000 {
			t.Errorf("%s: the stalled client got all %d rows", sql, rows)
		}
		waitFor(t, func() bool { st := ts.srv.StreamStats(); return st.Streams == 0 && st.Used == 0 })
	}
	if got := ts.count("ev"); got != 100_000 {
		t.Fatalf("a full read after the cut-offs: %d rows", got)
	}
	if st := ts.srv.StreamStats(); st.Refused != 0 || st.Peak > st.Budget {
		t.Errorf("stats %+v: refused streams, or a peak over the budget", st)
	}
}

// A stream that finds the budget spent waits, and gives up after the stall
// timeout with ResourceExhausted naming the budget. A stream cut off keeps
// charged only what gRPC still holds for its client, until the connection
// closes.
func TestStreamWaitsForBudget(t *testing.T) {
	ts := streamServer(t, flightsrv.Options{StreamMemory: 4 << 20, StreamWindow: 256 << 10, StallTimeout: 300 * time.Millisecond})
	scan := ts.mustExec("SELECT * FROM ev").GetEndpoint()[0].GetTicket()
	// A subscription that has caught up holds its charge (3 MiB of
	// read-ahead for the one bucket, and its window), and is never cut
	// off: nothing of it waits to be sent.
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	sub, err := ts.cl.DoGet(ctx, ts.mustExec("SELECT * FROM changes('ev', 'latest')").GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts.cl.DoGet(testCtx(t), scan)
	expectCode(t, err, codes.ResourceExhausted, "stream memory budget of 4.0 MiB", "waited 300ms")
	if st := ts.srv.StreamStats(); st.Refused != 1 || st.Streams != 1 || st.Stalled != 0 {
		t.Fatalf("stats %+v: want the scan refused and the subscription served", st)
	}
	cancel()
	sub.Release()
	waitFor(t, func() bool { st := ts.srv.StreamStats(); return st.Streams == 0 && st.Used == 0 })

	// Alone, the scan starts (its charge cut to the whole budget); its
	// client stalls, and it is cut off.
	stalling := dialStalling(t, ts.addr)
	rdr, err := stalling.DoGet(testCtx(t), scan)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	waitFor(t, func() bool { st := ts.srv.StreamStats(); return st.Stalled == 1 && st.Streams == 0 })
	if st := ts.srv.StreamStats(); st.Used == 0 || st.Used != st.Produced || st.Used > 1<<20 {
		t.Fatalf("after the cut-off: %+v; want what gRPC holds for the stalled client, and only that, still charged", st)
	}
	// The client goes away without reading: what gRPC held for its
	// connection is given back.
	stalling.Close()
	waitFor(t, func() bool { st := ts.srv.StreamStats(); return st.Used == 0 && st.Produced == 0 })
	if got := ts.count("ev"); got != 100_000 {
		t.Fatalf("a full read afterwards: %d rows", got)
	}
}

// A client that reads slowly but steadily is back-pressured, never cut off.
func TestSlowReaderIsNotCutOff(t *testing.T) {
	ts := streamServer(t, flightsrv.Options{StreamWindow: 64 << 10, StallTimeout: 2 * time.Second})
	info := ts.mustExec("SELECT * FROM ev")
	rdr, err := dialStalling(t, ts.addr).DoGet(testCtx(t), info.GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows int64
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
		time.Sleep(10 * time.Millisecond) // a slow client: pacing, not synchronisation
	}
	if err := rdr.Err(); err != nil || rows != 100_000 {
		t.Fatalf("slow reader: %d rows, %v", rows, err)
	}
	if st := ts.srv.StreamStats(); st.Stalled != 0 {
		t.Fatalf("stats %+v: the slow reader was cut off", st)
	}
}
