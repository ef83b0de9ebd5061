package flightsrv_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/flightsrv"
)

// asWriter is a context whose calls carry the idempotent writer headers.
func asWriter(t testing.TB, id int64, seq int32) context.Context {
	return metadata.AppendToOutgoingContext(testCtx(t),
		flightsrv.WriterIDHeader, strconv.FormatInt(id, 10), flightsrv.WriterSeqHeader, strconv.Itoa(int(seq)))
}

// ingestCtx sends recs (which it releases) with ADBC bulk ingest (append)
// under ctx.
func (ts *testServer) ingestCtx(ctx context.Context, table string, recs ...arrow.RecordBatch) (int64, error) {
	ts.t.Helper()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer rdr.Release()
	return ts.cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: modes["append"]})
}

// putCtx writes recs (released) with a plain DoPut of the table's path
// under ctx and returns the row count of the reply.
func (ts *testServer) putCtx(ctx context.Context, table string, recs ...arrow.RecordBatch) (string, error) {
	ts.t.Helper()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	stream, err := ts.cl.Client.DoPut(ctx)
	if err != nil {
		ts.t.Fatal(err)
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(recs[0].Schema()))
	w.SetFlightDescriptor(pathDesc(table))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			break
		}
	}
	w.Close()
	stream.CloseSend()
	meta, err := drainPut(stream)
	if len(meta) != 1 {
		return "", err
	}
	return meta[0], err
}

// Every call that ingests rows, with the writer headers, is stored once
// however often it is sent, and a call out of sequence is refused with
// the sequence expected.
func TestIdempotentWritePaths(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4')") // round-robin
	const w = 0x5eed

	// ADBC bulk ingest.
	for range 3 {
		if n, err := ts.ingestCtx(asWriter(t, w, 0), "ev", events(t, 0, 30), events(t, 30, 20)); err != nil || n != 50 {
			t.Fatalf("ingest seq 0: %d, %v", n, err)
		}
	}
	_, err := ts.ingestCtx(asWriter(t, w, 2), "ev", events(t, 50, 10))
	expectCode(t, err, codes.FailedPrecondition, "sequence 2", "expected 1", "or 0")
	// A plain DoPut of the table's path.
	for range 2 {
		if n, err := ts.putCtx(asWriter(t, w, 1), "ev", events(t, 50, 10)); err != nil || n != "10" {
			t.Fatalf("DoPut seq 1: %q, %v", n, err)
		}
	}
	// INSERT, as a statement and prepared.
	for range 2 {
		if n, err := ts.cl.ExecuteUpdate(asWriter(t, w, 2), "INSERT INTO ev SELECT i, 0.5, 'x', NULL FROM range(60, 65) t(i)"); err != nil || n != 5 {
			t.Fatalf("INSERT seq 2: %d, %v", n, err)
		}
	}
	prep, err := ts.cl.Prepare(testCtx(t), "INSERT INTO ev VALUES (65, 1.5, 'y', NULL), (66, 2.5, 'z', NULL)")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(testCtx(t))
	for range 2 {
		if n, err := prep.ExecuteUpdate(asWriter(t, w, 3)); err != nil || n != 2 {
			t.Fatalf("prepared INSERT seq 3: %d, %v", n, err)
		}
	}
	_, err = ts.cl.ExecuteUpdate(asWriter(t, w, 1), "INSERT INTO ev VALUES (99, 0, 'late', NULL)")
	expectCode(t, err, codes.FailedPrecondition, "expected 4 (the next call) or 3 (a retry")
	if got := ts.count("ev"); got != 67 {
		t.Fatalf("%d rows, want 67: each call once", got)
	}
	// Without the headers, the same call is stored again.
	if n, err := ts.putCtx(testCtx(t), "ev", events(t, 50, 10)); err != nil || n != "10" {
		t.Fatalf("DoPut without a writer: %q, %v", n, err)
	}
	if got := ts.count("ev"); got != 77 {
		t.Fatalf("%d rows, want 77", got)
	}
}

// The headers go together and must be numbers in range; a refused
// ingest in create mode creates no table.
func TestIdempotentHeaderRefusals(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	for _, c := range []struct {
		kv    []string
		words []string
	}{
		{[]string{flightsrv.WriterIDHeader, "7"}, []string{"go together"}},
		{[]string{flightsrv.WriterSeqHeader, "0"}, []string{"go together"}},
		{[]string{flightsrv.WriterIDHeader, "0", flightsrv.WriterSeqHeader, "0"}, []string{"non-zero"}},
		{[]string{flightsrv.WriterIDHeader, "x", flightsrv.WriterSeqHeader, "0"}, []string{flightsrv.WriterIDHeader, "int64"}},
		{[]string{flightsrv.WriterIDHeader, "7", flightsrv.WriterSeqHeader, "-1"}, []string{"from 0 to 2147483647"}},
		{[]string{flightsrv.WriterIDHeader, "7", flightsrv.WriterSeqHeader, "2147483648"}, []string{"int32"}},
		{[]string{flightsrv.WriterIDHeader, "7", flightsrv.WriterIDHeader, "8", flightsrv.WriterSeqHeader, "0"}, []string{"conflicting"}},
	} {
		ctx := metadata.AppendToOutgoingContext(testCtx(t), c.kv...)
		_, err := ts.ingestCtx(ctx, "ev", events(t, 0, 3))
		expectCode(t, err, codes.InvalidArgument, c.words...)
		_, err = ts.putCtx(ctx, "ev", events(t, 0, 3))
		expectCode(t, err, codes.InvalidArgument, c.words...)
		rec := events(t, 0, 3)
		rdr, rerr := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
		if rerr != nil {
			t.Fatal(rerr)
		}
		_, err = ts.cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "fresh", TableDefinitionOptions: modes["create"]})
		rdr.Release()
		rec.Release()
		expectCode(t, err, codes.InvalidArgument, c.words...)
	}
	if got := ts.count("ev"); got != 0 {
		t.Fatalf("refused calls stored %d rows", got)
	}
	_, err := ts.exec("SELECT * FROM fresh")
	expectCode(t, err, codes.NotFound)
}

// A retried upsert of a primary-key table leaves its state and its key
// index (which lookups read) as they were.
func TestIdempotentPKIngest(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec(`CREATE TABLE acc (id BIGINT, total BIGINT, PRIMARY KEY (id)) WITH ('bucket.num'='2',
		'merge-engine'='aggregation', 'fields.total.agg'='sum')`)
	rows := func() arrow.RecordBatch {
		return record(t, ts.mem, i64("id", false, 1, 2, 3), i64("total", true, 10, 20, 30))
	}
	for seq := range int32(2) {
		for range 3 {
			if n, err := ts.ingestCtx(asWriter(t, -1, seq), "acc", rows()); err != nil || n != 3 {
				t.Fatalf("upsert seq %d: %d, %v", seq, n, err)
			}
		}
	}
	want := []string{"1|20", "2|40", "3|60"}
	sameRows(t, "state", ts.fetch(ts.mustExec("SELECT id, total FROM acc")), want)
	sameRows(t, "lookup (the key index)", ts.fetch(ts.mustExec("SELECT id, total FROM acc WHERE id = 2")), want[1:2])
	// +I of each key, then -U/+U of each key once.
	sameRows(t, "changelog records", ts.rows(`SELECT count(*) FROM "acc$changelog"`), []string{"9"})
}

// Writers with different ids ingest concurrently, each call sent twice at
// once: every call is stored once.
func TestIdempotentConcurrentIngest(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3')")
	const writers, calls, rows = 3, 4, 10
	errs := make(chan error, writers*calls*2)
	runConcurrently(writers, func(w int) {
		for c := range calls {
			runConcurrently(2, func(int) {
				n, err := ts.ingestCtx(asWriter(t, int64(w+1), int32(c)), "ev", events(t, (w*calls+c)*rows, rows))
				if err != nil || n != rows {
					errs <- fmt.Errorf("writer %d call %d: %d rows, %v", w+1, c, n, err)
				}
			})
		}
	})
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sameRows(t, "rows", ts.fetch(ts.mustExec("SELECT * FROM ev")), eventRows(t, 0, writers*calls*rows))
}
