package flightsrv_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A prepared lookup keeps its plan and its bound keys between calls
// (lookup_prepared.go); each execution still answers for the table as it
// is: rebinding replaces the keys, a parameter of another integer type
// is converted, a table recreated is planned again, and a table that
// lost its key is answered by the engine.
func TestPKPreparedLookupFollowsTheTable(t *testing.T) {
	ts := startEngineServer(t)
	ctx := testCtx(t)
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 10), 1))
	p, err := ts.cl.Prepare(ctx, "SELECT id, v FROM kv WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	run := func(what string, params arrow.RecordBatch, wantKind string, want ...string) {
		t.Helper()
		p.SetParameters(params)
		params.Release()
		info, err := p.Execute(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if k := ticketKind(t, info); k != wantKind {
			t.Errorf("%s: ticket %q, want %q", what, k, wantKind)
		}
		if got := ts.fetch(info); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	run("one key", record(t, ts.mem, i64("1", true, 3)), "lookup", "3|1")
	run("rebound", record(t, ts.mem, i64("1", true, 4, 2)), "lookup", "4|1", "2|1")
	run("a NULL among the keys", record(t, ts.mem, i64("1", true, 5, nil, 6)), "lookup", "5|1", "6|1")
	b := array.NewInt32Builder(ts.mem)
	b.AppendValues([]int32{7, 1}, nil)
	a := b.NewArray()
	b.Release()
	i32 := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil), []arrow.Array{a}, 2)
	a.Release()
	run("INTEGER parameters", i32, "lookup", "7|1", "1|1")

	// Bound, then the table is recreated with other rows before the
	// execution: the new table answers.
	bound := record(t, ts.mem, i64("1", true, 3))
	p.SetParameters(bound)
	bound.Release()
	stale, err := p.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts.mustExec("DROP TABLE kv")
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(3, 4), 9))
	if got := ts.fetch(stale); strings.Join(got, ",") != "3|9" {
		t.Errorf("fetched after a recreate: %v, want [3|9]", got)
	}
	run("after a recreate", record(t, ts.mem, i64("1", true, 3, 4)), "lookup", "3|9")

	// Recreated without a key: the engine runs the statement.
	ts.mustExec("DROP TABLE kv")
	ts.mustExec("CREATE TABLE kv (id BIGINT, region VARCHAR, v DOUBLE, n BIGINT)")
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, []any{3, 3}, 5))
	run("a log table", record(t, ts.mem, i64("1", true, 3)), "query", "3|5", "3|5")
}

// Many executions of one prepared lookup, each bound to other keys (one
// or two, present or absent), each answer the keys bound last.
func TestPKPreparedLookupRepeated(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ctx := testCtx(t)
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 100), 1))
	p, err := ts.cl.Prepare(ctx, "SELECT * FROM kv WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for i := range 200 {
		ids := []int64{int64(i % 120), int64((i * 7) % 120)}[:1+i%2]
		if err := benchLookup(ctx, ts.cl, p, ids, func(id int64) bool { return id < 100 }); err != nil {
			t.Fatalf("lookup %d of %v: %v", i, ids, err)
		}
	}
}
