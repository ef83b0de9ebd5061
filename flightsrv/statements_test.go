package flightsrv_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

func TestDDLThroughExecute(t *testing.T) {
	ts := startServer(t, serverConfig{})
	info := ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	if n := len(info.GetEndpoint()); n != 0 {
		t.Errorf("CREATE TABLE returned %d endpoints, want 0", n)
	}
	if got := ts.count("ev"); got != 0 {
		t.Errorf("new table holds %d rows", got)
	}

	_, err := ts.exec("CREATE TABLE ev (a BIGINT)")
	expectCode(t, err, codes.AlreadyExists, "ev")

	_, err = ts.exec("CREATE TABLE bad (a FLUBBER)")
	expectCode(t, err, codes.InvalidArgument, "FLUBBER")

	_, err = ts.exec("DROP TABLE nope")
	expectCode(t, err, codes.NotFound, "nope")

	_, err = ts.exec("CREATE TABLE bad2 (a BIGINT) WITH ('bucket.nmu'='2')")
	expectCode(t, err, codes.InvalidArgument, "bucket.nmu")

	_, err = ts.exec("CREATE TABEL x (a BIGINT)")
	if err == nil {
		t.Error("misspelt CREATE: no error")
	}

	// DDL through ExecuteUpdate (DoPutCommandStatementUpdate) too.
	if _, err := ts.cl.ExecuteUpdate(testCtx(t), "CREATE DATABASE sales"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cl.ExecuteUpdate(testCtx(t), "CREATE TABLE sales.orders (id BIGINT NOT NULL, total DOUBLE)"); err != nil {
		t.Fatal(err)
	}
	if got := ts.count("sales.orders"); got != 0 {
		t.Errorf("sales.orders holds %d rows", got)
	}
	_, err = ts.cl.ExecuteUpdate(testCtx(t), "SELECT * FROM ev")
	expectCode(t, err, codes.InvalidArgument)

	ts.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	_, err = ts.exec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	expectCode(t, err, codes.AlreadyExists, "note")

	ts.mustExec("DROP TABLE ev")
	_, err = ts.exec("SELECT * FROM ev")
	expectCode(t, err, codes.NotFound, "ev")
	_, err = ts.exec("DROP DATABASE sales")
	expectCode(t, err, codes.FailedPrecondition, "sales")
}

// A query that is not a plain scan needs the engine, which this server
// does not have: a clear Unimplemented, not a crash.
func TestQueryWithoutEngine(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	_, err := ts.exec("SELECT count(*) FROM ev")
	expectCode(t, err, codes.Unimplemented)
	_, err = ts.exec("SELECT nope FROM ev")
	expectCode(t, err, codes.InvalidArgument, "nope")
}

// SELECT * and SELECT cols return the ingested rows, over one endpoint per
// bucket, for every codec.
func TestScanReturnsIngestedRows(t *testing.T) {
	for _, codec := range []string{"none", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			ts := startServer(t, serverConfig{})
			ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id', 'log.compression'='" + codec + "')")
			if n := ts.mustIngest("ev", "append", events(t, 0, 1000), events(t, 1000, 234)); n != 1234 {
				t.Fatalf("ingested %d rows, want 1234", n)
			}
			if n := ts.mustIngest("ev", "append", events(t, 2000, 66)); n != 66 {
				t.Fatalf("ingested %d rows, want 66", n)
			}
			want := append(append(eventRows(t, 0, 1000), eventRows(t, 1000, 234)...), eventRows(t, 2000, 66)...)

			info := ts.mustExec("SELECT * FROM ev")
			if n := len(info.GetEndpoint()); n != 4 {
				t.Errorf("SELECT * has %d endpoints, want 4 (one per bucket)", n)
			}
			if info.GetTotalRecords() != 1300 {
				t.Errorf("TotalRecords %d, want 1300", info.GetTotalRecords())
			}
			schema, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if !bare(schema).Equal(eventsSchema()) {
				t.Errorf("SELECT * schema %v, want %v", schema, eventsSchema())
			}
			sameRows(t, "SELECT *", ts.fetch(info), want)

			for _, tc := range []struct {
				sql  string
				cols []int
			}{
				{"SELECT kind, id FROM ev", []int{2, 0}},
				{"select ts from ev;", []int{3}},
				{"SELECT id, amount, kind, ts FROM default.ev", []int{0, 1, 2, 3}},
				{`SELECT "amount", ID FROM ev`, []int{1, 0}},
			} {
				info := ts.mustExec(tc.sql)
				schema, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				if schema.NumFields() != len(tc.cols) {
					t.Errorf("%s: schema %v", tc.sql, schema)
				}
				for i, c := range tc.cols {
					if i < schema.NumFields() && !bare(schema).Field(i).Equal(eventsSchema().Field(c)) {
						t.Errorf("%s: field %d is %v, want %v", tc.sql, i, schema.Field(i), eventsSchema().Field(c))
					}
				}
				sameRows(t, tc.sql, ts.fetch(info), project(want, tc.cols))
			}
		})
	}
}

// MaxEndpoints groups buckets into fewer endpoints; every row is still
// returned once.
func TestScanGroupsBucketsIntoEndpoints(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='8', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 500))
	ts2 := startServerOver(t, ts, 3)
	info, err := ts2.exec("SELECT * FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info.GetEndpoint()); n != 3 {
		t.Errorf("%d endpoints with MaxEndpoints 3, want 3", n)
	}
	sameRows(t, "grouped", ts2.fetch(info), eventRows(t, 0, 500))
}

// Empty buckets get no endpoint; an empty table none at all.
func TestScanEmptyBuckets(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4')")
	info := ts.mustExec("SELECT * FROM ev")
	if n := len(info.GetEndpoint()); n != 0 {
		t.Errorf("empty table: %d endpoints", n)
	}
	ts.mustIngest("ev", "append", events(t, 0, 10))
	info = ts.mustExec("SELECT * FROM ev")
	if n := len(info.GetEndpoint()); n != 1 {
		t.Errorf("one batch in one bucket: %d endpoints, want 1", n)
	}
	sameRows(t, "one batch", ts.fetch(info), eventRows(t, 0, 10))
}

// The tickets of a FlightInfo cover the rows committed when it was made:
// rows ingested afterwards are not returned by them.
func TestScanReadsOnlyRowsCommittedAtPlanning(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 200))
	info := ts.mustExec("SELECT * FROM ev")
	prep, err := ts.cl.Prepare(testCtx(t), "SELECT id FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(testCtx(t))
	pinfo, err := prep.Execute(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ts.mustIngest("ev", "append", events(t, 200, 300))
	sameRows(t, "FlightInfo made before the second ingest", ts.fetch(info), eventRows(t, 0, 200))
	sameRows(t, "prepared FlightInfo made before the second ingest", ts.fetch(pinfo), eventRows(t, 0, 200, 0))
	if got := ts.count("ev"); got != 500 {
		t.Errorf("a new scan sees %d rows, want 500", got)
	}
}

// Batches written before ADD COLUMN are served with nulls in the new
// column, through the same tickets as the others.
func TestScanAfterAddColumn(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
	ts.mustIngest("ev", "append", events(t, 0, 30))
	ts.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	withNote := addColumn(t, events(t, 30, 2), str("note", "a", "b"))
	ts.mustIngest("ev", "append", withNote)
	var want []string
	for _, r := range eventRows(t, 0, 30) {
		want = append(want, r+"|(null)")
	}
	more := eventRows(t, 30, 2)
	want = append(want, more[0]+"|a", more[1]+"|b")
	sameRows(t, "SELECT *", ts.fetch(ts.mustExec("SELECT * FROM ev")), want)
	sameRows(t, "SELECT note, id", ts.fetch(ts.mustExec("SELECT note, id FROM ev")), project(want, []int{4, 0}))
}

// A prepared plain scan describes its result (DatasetSchema) and returns
// the rows when executed, repeatedly.
func TestPreparedScan(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 321))
	ctx := testCtx(t)
	prep, err := ts.cl.Prepare(ctx, "SELECT kind, id FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	wantSchema := arrow.NewSchema([]arrow.Field{eventsSchema().Field(2), eventsSchema().Field(0)}, nil)
	if ds := prep.DatasetSchema(); ds == nil || !bare(ds).Equal(wantSchema) {
		t.Errorf("DatasetSchema %v, want %v", ds, wantSchema)
	}
	if ps := prep.ParameterSchema(); ps != nil && ps.NumFields() != 0 {
		t.Errorf("ParameterSchema %v, want none", ps)
	}
	sr, err := prep.GetSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := flight.DeserializeSchema(sr.GetSchema(), memory.DefaultAllocator); err != nil || !bare(s).Equal(wantSchema) {
		t.Errorf("GetSchema %v (%v), want %v", s, err, wantSchema)
	}
	for range 2 {
		info, err := prep.Execute(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, "prepared", ts.fetch(info), eventRows(t, 0, 321, 2, 0))
	}
	handle := prep.Handle()
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The server forgot the handle.
	_, err = ts.cl.Client.GetFlightInfo(ctx, cmdDesc(t, &pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle}))
	expectCode(t, err, codes.NotFound)

	// Preparing a scan of an unknown table fails at once.
	_, err = ts.cl.Prepare(ctx, "SELECT * FROM nope")
	expectCode(t, err, codes.NotFound, "nope")

	// A prepared DDL statement runs as an update.
	pddl, err := ts.cl.Prepare(ctx, "CREATE TABLE other (a BIGINT)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pddl.ExecuteUpdate(ctx); err != nil {
		t.Fatal(err)
	}
	pddl.Close(ctx)
	if got := ts.count("other"); got != 0 {
		t.Errorf("other holds %d rows", got)
	}
}

// GetExecuteSchema describes a scan without running it.
func TestExecuteSchema(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	sr, err := ts.cl.GetExecuteSchema(testCtx(t), "SELECT ts, id FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	s, err := flight.DeserializeSchema(sr.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	want := arrow.NewSchema([]arrow.Field{eventsSchema().Field(3), eventsSchema().Field(0)}, nil)
	if !bare(s).Equal(want) {
		t.Errorf("schema %v, want %v", s, want)
	}
}

// Identifiers follow DuckDB, whose dialect SELECT is (docs/sql.md), and the
// server's own SqlInfo (quoted identifiers case-insensitive): a column
// named with capitals, as an ingest from pandas or pyarrow creates them,
// is found by a plain scan however the query spells it.
func TestScanColumnNamesAreCaseInsensitive(t *testing.T) {
	ts := startServer(t, serverConfig{})
	rec := record(t, memory.DefaultAllocator, i64("userId", false, 1, 2), str("Region", "eu", "us"))
	ts.mustIngest("visits", "create", rec)
	for _, sql := range []string{
		`SELECT "userId", "Region" FROM visits`,
		`SELECT userId, Region FROM visits`,
		`SELECT USERID, region FROM visits`,
	} {
		info, err := ts.exec(sql)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		sameRows(t, sql, ts.fetch(info), []string{"1|eu", "2|us"})
	}
	// The same for a column created by DDL with a quoted capital.
	ts.mustExec(`CREATE TABLE ev (id BIGINT NOT NULL, "Amount" DOUBLE)`)
	for _, sql := range []string{`SELECT "Amount" FROM ev`, `SELECT Amount FROM ev`, `SELECT "AMOUNT" FROM ev`} {
		if _, err := ts.exec(sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

// The same for table names: a table an ingest created as "Visits" is
// found by SELECT * FROM Visits, as DuckDB would.
func TestScanTableNamesAreCaseInsensitive(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustIngest("Visits", "create", record(t, memory.DefaultAllocator, i64("id", false, 1, 2)))
	for _, sql := range []string{`SELECT * FROM "Visits"`, `SELECT * FROM Visits`, `SELECT id FROM visits`} {
		info, err := ts.exec(sql)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		sameRows(t, sql, ts.fetch(info), []string{"1", "2"})
	}
}

// Messages over gRPC's 4 MiB default travel both ways: one ingested record
// and one stored batch of about 7 MiB.
func TestLargeMessages(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('log.compression'='none')")
	rec := events(t, 0, 200_000)
	size := int64(0)
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				size += int64(b.Len())
			}
		}
	}
	if size < 5<<20 {
		t.Fatalf("record of %d bytes is not over 4 MiB", size)
	}
	if n := ts.mustIngest("ev", "append", rec); n != 200_000 {
		t.Fatalf("ingested %d rows", n)
	}
	if got := ts.count("ev"); got != 200_000 {
		t.Errorf("read %d rows, want 200000", got)
	}
}
