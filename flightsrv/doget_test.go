package flightsrv_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/flightsrv"
)

// doGetErr runs a DoGet of raw and returns its error, from the call or
// from the stream.
func (ts *testServer) doGetErr(raw []byte) error {
	ts.t.Helper()
	rdr, err := ts.cl.DoGet(testCtx(ts.t), &flight.Ticket{Ticket: raw})
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

func TestDoGetRefusesBadTickets(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
	ts.mustIngest("ev", "append", events(t, 0, 10))
	tbl, err := ts.store.Get(context.Background(), "", "ev")
	if err != nil {
		t.Fatal(err)
	}
	id := tbl.Def().ID
	// sign signs a ticket body, valid until 2100 unless it says otherwise.
	sign := func(body string) []byte {
		return flightsrv.SealRawTicket(ts.srv, []byte(strings.Replace(body, `{"kind"`, `{"exp":4102444800,"kind"`, 1)))
	}
	scanTicket := func(body string) []byte { return sign(fmt.Sprintf(`{"kind":"scan","table":%d,%s}`, id, body)) }
	good := scanTicket(`"cols":[0],"ranges":[{"Bucket":0,"From":0,"To":10}]`)
	altered := bytes.Replace(good, []byte(`"To":10`), []byte(`"To":11`), 1)

	for _, tc := range []struct {
		name   string
		ticket []byte
		code   codes.Code
	}{
		{"truncated JSON", sign(`{"kind":"scan","tab`), codes.InvalidArgument},
		{"not JSON", sign("\x00\x01\x02garbage"), codes.InvalidArgument},
		{"unknown kind", sign(`{"kind":"launch"}`), codes.InvalidArgument},
		{"oversized", sign(`{"kind":"scan","sql":"` + strings.Repeat("x", 100<<10)), codes.InvalidArgument},
		{"bucket out of range", scanTicket(`"cols":[0],"ranges":[{"Bucket":7,"From":0,"To":10}]`), codes.InvalidArgument},
		{"negative bucket", scanTicket(`"cols":[0],"ranges":[{"Bucket":-1,"From":0,"To":10}]`), codes.InvalidArgument},
		{"column out of range", scanTicket(`"cols":[0,9],"ranges":[{"Bucket":0,"From":0,"To":10}]`), codes.InvalidArgument},
		{"unknown table", sign(`{"kind":"scan","table":987654,"cols":[0],"ranges":[{"Bucket":0,"From":0,"To":1}]}`), codes.NotFound},
		{"unknown prepared handle", sign(`{"kind":"lookup","handle":"deadbeef"}`), codes.NotFound},
		{"kind of an older format", sign(`{"kind":"prepared","handle":"deadbeef"}`), codes.InvalidArgument},
		{"expired", sign(fmt.Sprintf(`{"exp":1,"kind":"scan","table":%d,"cols":[0],"ranges":[{"Bucket":0,"From":0,"To":10}]}`, id)), codes.FailedPrecondition},
		{"no expiry", sign(`{"exp":0,"kind":"query","sql":"SELECT 1"}`), codes.FailedPrecondition},
		{"query pinning a dropped table", sign(`{"kind":"query","sql":"SELECT 1","pins":[{"table":987654}]}`), codes.FailedPrecondition},
		{"query with malformed parameters", sign(`{"kind":"query","sql":"SELECT ? AS x","params":"AAAA"}`), codes.InvalidArgument},
		{"older ticket format", append([]byte("LSTK2"), good[5:]...), codes.InvalidArgument},
		{"unsigned (forged)", []byte(fmt.Sprintf(`LSTK1{"kind":"scan","table":%d,"cols":[0],"ranges":[{"Bucket":0,"From":0,"To":10}]}`, id)), codes.InvalidArgument},
		{"forged MAC", append([]byte("LSTK3"), bytes.Repeat([]byte{0}, 32+5)...), codes.PermissionDenied},
		{"altered after signing", altered, codes.PermissionDenied},
		{"another user's", sign(fmt.Sprintf(`{"kind":"scan","user":7,"table":%d,"cols":[0],"ranges":[{"Bucket":0,"From":0,"To":10}]}`, id)), codes.PermissionDenied},
		{"not a ticket at all", []byte("hello, server"), codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ts.doGetErr(tc.ticket)
			if err == nil {
				t.Fatal("accepted")
			}
			st, _ := status.FromError(err)
			if st.Code() != tc.code {
				t.Errorf("code %v (%s), want %v", st.Code(), st.Message(), tc.code)
			}
		})
	}
	// A range reaching past the committed offsets returns only committed
	// rows, never an error or garbage.
	rows, err := ts.fetchTicket(scanTicket(`"cols":[0],"ranges":[{"Bucket":0,"From":0,"To":1000000},{"Bucket":1,"From":0,"To":1000000}]`))
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "over-long ranges", rows, eventRows(t, 0, 10, 0))
	// A range starting past the committed offset is refused.
	err = ts.doGetErr(scanTicket(`"cols":[0],"ranges":[{"Bucket":0,"From":500,"To":1000}]`))
	if st, _ := status.FromError(err); err == nil || st.Code() == codes.OK || st.Code() == codes.Internal || st.Code() == codes.Unknown {
		t.Errorf("range past the log end: %v, want a client error code", err)
	}
	if got := ts.count("ev"); got != 10 {
		t.Errorf("after bad tickets: %d rows", got)
	}
}

func (ts *testServer) fetchTicket(raw []byte) ([]string, error) {
	rdr, err := ts.cl.DoGet(testCtx(ts.t), &flight.Ticket{Ticket: raw})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rows = append(rows, rowStrings(rdr.RecordBatch())...)
	}
	return rows, rdr.Err()
}

// A client that cancels a DoGet mid-stream leaves the server healthy: the
// handler stops (the server's GracefulStop at cleanup would hang
// otherwise) and later requests work.
func TestDoGetCancelMidStream(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('log.compression'='none')")
	recs := make([]arrow.RecordBatch, 200)
	for i := range recs {
		recs[i] = events(t, i*500, 500)
	}
	if n := ts.mustIngest("ev", "append", recs...); n != 100_000 {
		t.Fatalf("ingested %d rows", n)
	}
	info := ts.mustExec("SELECT * FROM ev")
	for round := range 3 {
		ctx, cancel := context.WithCancel(testCtx(t))
		rdr, err := ts.cl.DoGet(ctx, info.GetEndpoint()[0].GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		if !rdr.Next() {
			t.Fatalf("round %d: no first record: %v", round, rdr.Err())
		}
		cancel()
		n := 1
		for rdr.Next() {
			n++
		}
		switch err := rdr.Err(); {
		case err == nil && n == 200:
			// gRPC had buffered the whole stream before the cancel.
			t.Logf("round %d: the whole stream arrived before the cancel", round)
		case status.Code(err) != codes.Canceled:
			t.Errorf("round %d: stream ended after %d records with %v, want Canceled", round, n, err)
		}
		rdr.Release()
	}
	if got := ts.count("ev"); got != 100_000 {
		t.Errorf("after cancelled reads: %d rows", got)
	}
	ts.mustIngest("ev", "append", events(t, 1_000_000, 5))
	if got := ts.count("ev"); got != 100_005 {
		t.Errorf("after an ingest following cancelled reads: %d rows", got)
	}
}

// A client may fetch the endpoints of one FlightInfo in parallel.
func TestDoGetEndpointsInParallel(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='8', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 2000))
	info := ts.mustExec("SELECT id, kind FROM ev")
	eps := info.GetEndpoint()
	rows := make([][]string, len(eps))
	errs := make([]error, len(eps))
	runConcurrently(len(eps), func(i int) {
		rows[i], errs[i] = ts.fetchTicket(eps[i].GetTicket().GetTicket())
	})
	var all []string
	for i := range eps {
		if errs[i] != nil {
			t.Errorf("endpoint %d: %v", i, errs[i])
		}
		all = append(all, rows[i]...)
	}
	sameRows(t, "parallel fetch", all, eventRows(t, 0, 2000, 0, 2))
}

// Scans decode with arrow-go's stock reader: a DoGet stream of a
// compressed table is a valid IPC stream, checked here through the
// flightsql client's record reader as well.
func TestDoGetStreamIsPlainIPC(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='1', 'log.compression'='zstd')")
	ts.mustIngest("ev", "append", events(t, 0, 300))
	info := ts.mustExec("SELECT kind FROM ev")
	stream, err := ts.cl.Client.DoGet(testCtx(t), info.GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if err := rec.Column(0).(*array.String).ValidateFull(); err != nil {
			t.Errorf("decoded column fails validation: %v", err)
		}
		rows = append(rows, rowStrings(rec)...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "kind", rows, eventRows(t, 0, 300, 2))
	if !strings.Contains(rdr.Schema().String(), "kind") {
		t.Errorf("schema %v", rdr.Schema())
	}
}
