package node

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// bucketInts runs sql, whose rows are (bucket INTEGER, value BIGINT), and
// returns value by bucket.
func bucketInts(t *testing.T, cl *flightsql.Client, sql string) map[int32]int64 {
	t.Helper()
	ctx := context.Background()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out := map[int32]int64{}
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			bs, vs := rec.Column(0).(*array.Int32), rec.Column(1).(*array.Int64)
			for i := range int(rec.NumRows()) {
				out[bs.Value(i)] = vs.Value(i)
			}
		}
		rdr.Release()
	}
	return out
}

// lakestream.offsets gives each bucket's committed end: the offset after
// the last row the changelog holds, per bucket, for every table; a bucket
// with no row yet ends at 0; a write moves the end by its rows.
func TestOffsetsTableEndsAtTheChangelog(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	for _, ddl := range []string{
		`CREATE TABLE t (id BIGINT) WITH ('bucket.num'='3', 'bucket.key'='id')`,
		`CREATE TABLE other (id BIGINT) WITH ('bucket.num'='2')`,
		`INSERT INTO t SELECT range FROM range(0, 1000)`,
		`INSERT INTO t SELECT range FROM range(1000, 1500)`,
	} {
		if _, err := cl.ExecuteUpdate(ctx, ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	ends := bucketInts(t, cl, `SELECT bucket, end_offset FROM lakestream.offsets WHERE table_name = 'default.t'`)
	want := bucketInts(t, cl, `SELECT _bucket, max(_offset) + 1 FROM "t$changelog" GROUP BY _bucket`)
	if len(ends) != 3 || fmt.Sprint(ends) != fmt.Sprint(want) {
		t.Fatalf("end offsets %v, want %v (the changelog's)", ends, want)
	}
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != 1500 {
		t.Fatalf("end offsets add up to %d, want the 1500 rows written", total)
	}
	if got := bucketInts(t, cl, `SELECT bucket, end_offset FROM lakestream.offsets WHERE table_name = 'default.other'`); fmt.Sprint(got) != "map[0:0 1:0]" {
		t.Fatalf("empty table's ends %v, want 0 for both buckets", got)
	}
	if got := bucketInts(t, cl, `SELECT bucket, earliest_offset FROM lakestream.offsets WHERE table_name = 'default.t'`); fmt.Sprint(got) != "map[0:0 1:0 2:0]" {
		t.Fatalf("earliest offsets %v, want 0 (nothing retained away)", got)
	}
	if _, err := cl.ExecuteUpdate(ctx, `INSERT INTO t VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	after := bucketInts(t, cl, `SELECT bucket, end_offset FROM lakestream.offsets WHERE table_name = 'default.t'`)
	moved := 0
	for b, e := range after {
		if e != ends[b] {
			moved++
			if e != ends[b]+1 {
				t.Fatalf("bucket %d moved from %d to %d after one row", b, ends[b], e)
			}
		}
	}
	if moved != 1 {
		t.Fatalf("%d buckets moved after one row, want 1: %v -> %v", moved, ends, after)
	}
}
