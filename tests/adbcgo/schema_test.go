package adbcgo

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A prepared query's schema, as GetFlightInfo and GetSchema describe it
// once parameters are bound, is the schema its DoGet sends, column
// metadata included, for every basic type (result types that depend on
// the parameters' types: SELECT ? AS x).
func TestPreparedSchemaIsStreamSchema(t *testing.T) {
	s := startServer(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cl, err := flightsql.NewClient(s.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.Alloc = mem
	ctx := testCtx(t)
	c := &client{t: t, mem: mem}
	for _, b := range basicTypes {
		for _, st := range typedStatements {
			prep, err := cl.Prepare(ctx, st.sql)
			if err != nil {
				t.Fatalf("%s: %v", st.sql, err)
			}
			rec := c.typedRecord(b, st.values)
			prep.SetParameters(rec)
			info, err := prep.Execute(ctx)
			rec.Release()
			if err != nil {
				t.Fatalf("%s with %s: %v", st.sql, b.name, err)
			}
			announced, err := flight.DeserializeSchema(info.GetSchema(), mem)
			if err != nil {
				t.Fatal(err)
			}
			sr, err := prep.GetSchema(ctx)
			if err != nil {
				t.Fatal(err)
			}
			described, err := flight.DeserializeSchema(sr.GetSchema(), mem)
			if err != nil {
				t.Fatal(err)
			}
			rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				t.Fatal(err)
			}
			for rdr.Next() {
			}
			if err := rdr.Err(); err != nil {
				t.Fatal(err)
			}
			if !rdr.Schema().Equal(announced) || !described.Equal(announced) {
				t.Errorf("%s with %s: stream schema %s, FlightInfo %s, GetSchema %s", st.sql, b.name, rdr.Schema(), announced, described)
			}
			rdr.Release()
			if err := prep.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}
