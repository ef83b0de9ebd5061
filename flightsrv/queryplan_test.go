package flightsrv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

// fetchEach reads each endpoint of info on a connection of its own, as a
// distributed reader's executors do, and returns each endpoint's rows.
func (ts *testServer) fetchEach(info *flight.FlightInfo) ([][]string, error) {
	ts.t.Helper()
	out := make([][]string, len(info.GetEndpoint()))
	for i, ep := range info.GetEndpoint() {
		cl := dial(ts.t, ts.addr)
		rows, err := func() ([]string, error) {
			defer cl.Close()
			rdr, err := cl.DoGet(testCtx(ts.t), ep.GetTicket())
			if err != nil {
				return nil, err
			}
			defer rdr.Release()
			var rows []string
			for rdr.Next() {
				rows = append(rows, rowStrings(rdr.RecordBatch())...)
			}
			return rows, rdr.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: %w", i, err)
		}
		out[i] = rows
	}
	return out, nil
}

// eventsWhere renders the rows of events(0, n) that keep accepts, as
// render makes them.
func eventsWhere(t *testing.T, n int, keep func(id int) bool, render func(id int) string) []string {
	var out []string
	for id := range n {
		if keep(id) {
			out = append(out, render(id))
		}
	}
	return out
}

// A filtered projection of one table is split: one endpoint per bucket,
// each read on a new connection after more rows were written, and their
// union is the answer at planning time; an aggregate is one endpoint,
// pinned all the same.
func TestSplitQueryEndpoints(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='4', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 1000))

	split := ts.mustExec("SELECT id, amount * 2 AS twice FROM ev WHERE kind = 'buy' AND id >= 100")
	whole := ts.mustExec("SELECT count(*), sum(id) FROM ev WHERE kind = 'buy'")
	ordered := ts.mustExec("SELECT id FROM ev WHERE kind = 'buy' ORDER BY id LIMIT 5")
	if n := len(split.GetEndpoint()); n != 4 {
		t.Fatalf("filtered projection of a 4-bucket table: %d endpoints, want 4", n)
	}
	for i, ep := range split.GetEndpoint() {
		if exp := ep.GetExpirationTime().AsTime(); time.Until(exp) < 59*time.Minute || time.Until(exp) > time.Hour+time.Minute {
			t.Errorf("endpoint %d expires at %v, want in an hour (the default TicketTTL)", i, exp)
		}
	}
	for name, info := range map[string]*flight.FlightInfo{"aggregate": whole, "ordered": ordered} {
		if n := len(info.GetEndpoint()); n != 1 {
			t.Errorf("%s query: %d endpoints, want 1", name, n)
		}
	}
	ts.mustIngest("ev", "append", events(t, 1000, 500)) // after planning: in no answer

	parts, err := ts.fetchEach(split)
	if err != nil {
		t.Fatal(err)
	}
	var union []string
	for i, p := range parts {
		if len(p) == 0 {
			t.Errorf("endpoint %d read no rows: the buckets are not spread", i)
		}
		union = append(union, p...)
	}
	isBuy := func(id int) bool { return id%4 == 2 && id%11 != 5 }
	want := eventsWhere(t, 1000, func(id int) bool { return id >= 100 && isBuy(id) }, func(id int) string {
		return fmt.Sprintf("%d|%g", id, float64(id)/4)
	})
	sameRows(t, "union of the split endpoints", union, want)

	var n, sum int
	for id := range 1000 {
		if isBuy(id) {
			n, sum = n+1, sum+id
		}
	}
	rows, err := ts.fetchEach(whole)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "aggregate pinned at planning", rows[0], []string{fmt.Sprintf("%d|%d", n, sum)})
	// Planned now, the same kind of statement sees the later rows.
	sameRows(t, "count planned again", ts.rows("SELECT count(*) FROM ev"), []string{"1500"})
	if got := len(ts.rows("SELECT id FROM ev WHERE id >= 1000")); got != 500 {
		t.Errorf("a new plan reads %d of the later rows, want 500", got)
	}
}

// A prepared query's endpoints carry its parameters: they are read on
// other connections after the statement is closed.
func TestPreparedQueryTicketsOutliveTheStatement(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='3', 'bucket.key'='id')")
	ts.mustIngest("ev", "append", events(t, 0, 600))
	ctx := testCtx(t)
	prep, err := ts.cl.Prepare(ctx, "SELECT id, kind FROM ev WHERE id < ? AND kind IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(250)
	col := b.NewArray()
	b.Release()
	params := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	col.Release()
	defer params.Release()
	prep.SetParameters(params)
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(info.GetEndpoint()); n != 3 {
		t.Errorf("prepared filtered projection of a 3-bucket table: %d endpoints, want 3", n)
	}
	parts, err := ts.fetchEach(info)
	if err != nil {
		t.Fatalf("endpoints of a closed prepared statement: %v", err)
	}
	var union []string
	for _, p := range parts {
		union = append(union, p...)
	}
	want := eventsWhere(t, 600, func(id int) bool { return id < 250 && id%11 != 5 }, func(id int) string {
		return fmt.Sprintf("%d|%s", id, []string{"click", "view", "buy", "refund"}[id%4])
	})
	sameRows(t, "prepared, split", union, want)
}

// What is not split keeps one endpoint, whose ticket is self-contained
// too; a table altered or dropped between planning and DoGet refuses the
// ticket with FailedPrecondition rather than reading another table or
// another schema.
func TestQueryTicketsRefuseAChangedTable(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
	ts.mustExec("CREATE TABLE pk (id BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num'='2')")
	ts.mustIngest("ev", "append", events(t, 0, 100))
	ts.mustExec("INSERT INTO pk VALUES (1, 'a'), (2, 'b'), (3, 'c')")

	// A primary-key table's state is not pinnable: one endpoint, read as
	// the table is at DoGet.
	pkInfo := ts.mustExec("SELECT id FROM pk WHERE v <> 'b'")
	if n := len(pkInfo.GetEndpoint()); n != 1 {
		t.Errorf("query of a primary-key table: %d endpoints, want 1", n)
	}
	ts.mustExec("INSERT INTO pk VALUES (4, 'd')")
	sameRows(t, "primary-key table at DoGet", ts.fetch(pkInfo), []string{"1", "3", "4"})

	join := ts.mustExec("SELECT count(*) FROM ev JOIN pk ON ev.id = pk.id")
	altered := ts.mustExec("SELECT id FROM ev WHERE id < 10")
	ts.mustExec("ALTER TABLE ev ADD COLUMN note VARCHAR")
	_, err := ts.fetchEach(altered)
	expectCode(t, err, codes.FailedPrecondition, "changed since")
	dropped := ts.mustExec("SELECT id FROM ev WHERE id < 10")
	ts.mustExec("DROP TABLE ev")
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	_, err = ts.fetchEach(dropped)
	expectCode(t, err, codes.FailedPrecondition, "dropped")
	_, err = ts.fetchEach(join)
	expectCode(t, err, codes.FailedPrecondition)
}
