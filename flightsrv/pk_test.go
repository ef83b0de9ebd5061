package flightsrv_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

// startEngineServer is startServer with the query engine (DuckDB over the
// store), which DELETE, UPDATE and queries need.

// update runs a statement that returns a row count.
func (ts *testServer) update(sql string) (int64, error) {
	return ts.cl.ExecuteUpdate(testCtx(ts.t), sql)
}

func (ts *testServer) mustUpdate(sql string) int64 {
	ts.t.Helper()
	n, err := ts.update(sql)
	if err != nil {
		ts.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// keys counts the rows of a plain scan of a primary-key table (whose
// FlightInfo has no row count: the state is read at DoGet).
func (ts *testServer) keys(table string) int {
	ts.t.Helper()
	info := ts.mustExec("SELECT * FROM " + table)
	if n := info.GetTotalRecords(); n != -1 {
		ts.t.Errorf("a plain scan of %s announces %d rows, want -1 (unknown)", table, n)
	}
	return len(ts.fetch(info))
}

// ticketKind is the kind of the Lakestream ticket of info's endpoint.
func ticketKind(t *testing.T, info *flight.FlightInfo) string {
	t.Helper()
	if len(info.GetEndpoint()) != 1 {
		t.Fatalf("%d endpoints, want 1", len(info.GetEndpoint()))
	}
	raw := info.GetEndpoint()[0].GetTicket().GetTicket()
	_, rest, ok := bytes.Cut(raw, []byte(`"kind":"`))
	if !ok {
		t.Fatalf("ticket %q has no kind", raw)
	}
	kind, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(kind)
}

const pkDDL = "CREATE TABLE kv (id BIGINT, region VARCHAR, v DOUBLE, n BIGINT, PRIMARY KEY (id)) WITH ('bucket.num'='3')"

func kvRows(t *testing.T, mem memory.Allocator, ids []any, v float64) arrow.RecordBatch {
	regions := make([]any, len(ids))
	vs := make([]any, len(ids))
	ns := make([]any, len(ids))
	for i, id := range ids {
		regions[i] = []string{"eu", "us"}[id.(int)%2]
		vs[i] = v
		ns[i] = id
	}
	return record(t, mem, i64("id", false, ids...), str("region", regions...), f64("v", vs...), i64("n", true, ns...))
}

func ints(from, to int) []any {
	var out []any
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// Writes to a primary-key table upsert by key; DELETE and UPDATE with any
// predicate change the rows the engine selects, and report how many.
func TestPKDeleteAndUpdate(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 10), 1))
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(5, 12), 2))
	if n := ts.keys("kv"); n != 12 {
		t.Fatalf("after the upserts %d rows, want 12 (one per key)", n)
	}
	if n := ts.mustUpdate("DELETE FROM kv WHERE v = 2 AND id > (SELECT min(id) + 8 FROM kv)"); n != 3 {
		t.Errorf("DELETE reported %d rows, want 3 (ids 9, 10, 11)", n)
	}
	if n := ts.mustUpdate("UPDATE kv SET v = v * 10, n = n + 100 WHERE region = 'eu' AND id < 6"); n != 3 {
		t.Errorf("UPDATE reported %d rows, want 3 (ids 0, 2, 4)", n)
	}
	if n := ts.mustUpdate("DELETE FROM kv WHERE id = 12345"); n != 0 {
		t.Errorf("DELETE of no row reported %d", n)
	}
	// A column list is a partial update: region and n keep their values.
	if n := ts.mustUpdate("INSERT INTO kv (id, v) VALUES (1, 7.5), (100, 8.5)"); n != 2 {
		t.Errorf("INSERT reported %d rows, want 2", n)
	}
	sameRows(t, "state", ts.rows("SELECT id, region, v, n FROM kv ORDER BY id"), []string{
		"0|eu|10|100", "1|us|7.5|1", "2|eu|10|102", "3|us|1|3", "4|eu|10|104", "5|us|2|5",
		"6|eu|2|6", "7|us|2|7", "8|eu|2|8", "100|(null)|8.5|(null)",
	})
	// Without WHERE, every row.
	if n := ts.mustUpdate("UPDATE kv SET n = 0"); n != 10 {
		t.Errorf("UPDATE without WHERE reported %d rows, want 10", n)
	}
	if n := ts.mustUpdate("DELETE FROM kv"); n != 10 {
		t.Errorf("DELETE without WHERE reported %d rows, want 10", n)
	}
	if n := ts.keys("kv"); n != 0 {
		t.Errorf("%d rows after DELETE FROM kv", n)
	}
}

// Prepared DELETE and UPDATE bind their parameters; each bound row is one
// execution.
func TestPKPreparedDML(t *testing.T) {
	ts := startEngineServer(t)
	ctx := testCtx(t)
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 10), 1))
	p, err := ts.cl.Prepare(ctx, "UPDATE kv SET v = ? WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	params := record(t, ts.mem, f64("1", 5.0, 6.0), i64("2", true, 3, 4))
	defer params.Release()
	p.SetParameters(params)
	if n, err := p.ExecuteUpdate(ctx); err != nil || n != 2 {
		t.Fatalf("prepared UPDATE: %d %v, want 2", n, err)
	}
	d, err := ts.cl.Prepare(ctx, "DELETE FROM kv WHERE id >= ?")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	one := record(t, ts.mem, i64("1", true, 8))
	defer one.Release()
	d.SetParameters(one)
	if n, err := d.ExecuteUpdate(ctx); err != nil || n != 2 {
		t.Fatalf("prepared DELETE: %d %v, want 2", n, err)
	}
	sameRows(t, "state", ts.rows("SELECT id, v FROM kv WHERE id BETWEEN 2 AND 9"), []string{"2|1", "3|5", "4|6", "5|1", "6|1", "7|1"})
}

// DELETE and UPDATE need a key; a key column cannot be SET.
func TestPKDMLErrors(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec(pkDDL)
	ts.mustExec("CREATE TABLE logt (id BIGINT, v DOUBLE)")
	_, err := ts.update("DELETE FROM logt WHERE id = 1")
	expectCode(t, err, codes.InvalidArgument, "default.logt is a log table", "DELETE needs a table with a PRIMARY KEY")
	_, err = ts.update("UPDATE logt SET v = 1")
	expectCode(t, err, codes.InvalidArgument, "log table", "UPDATE")
	_, err = ts.update("UPDATE kv SET id = 2 WHERE id = 1")
	expectCode(t, err, codes.InvalidArgument, "cannot SET id", "primary-key column")
	_, err = ts.update("UPDATE kv SET nope = 2")
	expectCode(t, err, codes.InvalidArgument, `"nope" not found`)
	_, err = ts.update("DELETE FROM missing WHERE id = 1")
	expectCode(t, err, codes.NotFound, "missing")
	_, err = ts.update("DELETE FROM kv WHERE nope = 1")
	expectCode(t, err, codes.InvalidArgument, "nope")
	ts.mustUpdate("INSERT INTO kv VALUES (1, 'eu', 1.0, 1)")
	_, err = ts.update("UPDATE kv SET v = 'not a number'")
	expectCode(t, err, codes.InvalidArgument, "not a number")
	ts.mustExec("CREATE TABLE nn (id BIGINT, v BIGINT NOT NULL, PRIMARY KEY (id))")
	ts.mustUpdate("INSERT INTO nn VALUES (1, 1)")
	_, err = ts.update("UPDATE nn SET v = NULL WHERE id = 1")
	expectCode(t, err, codes.InvalidArgument, "v")
	sameRows(t, "nn after a refused UPDATE", ts.rows("SELECT * FROM nn"), []string{"1|1"})
}

// A query by the whole key is answered by a lookup (ticket kind "lookup"),
// with a literal, an IN list or a parameter; a batch of parameter rows is
// one lookup of all of them. Other shapes go to the engine.
func TestPKLookup(t *testing.T) {
	ts := startEngineServer(t)
	ctx := testCtx(t)
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 20), 1))
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(3, 4), 9))
	for sql, want := range map[string][]string{
		"SELECT * FROM kv WHERE id = 3":                  {"3|us|9|3"},
		"SELECT v, id FROM kv WHERE ID IN (4, 3, 4, 99)": {"1|4", "9|3"},
		"SELECT n FROM kv WHERE id = -1":                 {},
	} {
		info := ts.mustExec(sql)
		if k := ticketKind(t, info); k != "lookup" {
			t.Errorf("%s: ticket %q, want a lookup", sql, k)
		}
		sameRows(t, sql, ts.fetch(info), want)
	}
	// Not by the key: the engine, same answers.
	for _, sql := range []string{"SELECT * FROM kv WHERE n = 3", "SELECT * FROM kv WHERE id = 3 OR id = 4", "SELECT * FROM kv WHERE id = 3.0"} {
		if k := ticketKind(t, ts.mustExec(sql)); k != "query" {
			t.Errorf("%s: ticket %q, want a query", sql, k)
		}
	}
	sameRows(t, "id = 3.0", ts.rows("SELECT n FROM kv WHERE id = 3.0"), []string{"3"})

	p, err := ts.cl.Prepare(ctx, "SELECT id, v FROM kv WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if got := p.ParameterSchema(); got.NumFields() != 1 || !arrow.TypeEqual(got.Field(0).Type, arrow.PrimitiveTypes.Int64) {
		t.Errorf("parameter schema %v", got)
	}
	for _, tc := range []struct {
		keys []any
		want []string
	}{
		{[]any{3}, []string{"3|9"}},
		{[]any{42}, nil},
		{[]any{nil}, nil},
		// A batch: one row per key that exists, in the keys' order.
		{[]any{7, 1, 500, 3, 7}, []string{"7|1", "1|1", "3|9", "7|1"}},
	} {
		params := record(t, ts.mem, i64("1", true, tc.keys...))
		p.SetParameters(params)
		info, err := p.Execute(ctx)
		params.Release()
		if err != nil {
			t.Fatal(err)
		}
		if k := ticketKind(t, info); k != "lookup" {
			t.Errorf("prepared: ticket %q, want a lookup", k)
		}
		got := ts.fetch(info)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("keys %v: %v, want %v", tc.keys, got, tc.want)
		}
	}
}

// A composite key is looked up when every key column has a condition.
func TestPKLookupCompositeKey(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE ck (region VARCHAR, id BIGINT, v DOUBLE, PRIMARY KEY (region, id)) WITH ('bucket.num'='2')")
	ts.mustUpdate("INSERT INTO ck VALUES ('eu', 1, 1.0), ('us', 1, 2.0), ('eu', 2, 3.0)")
	info := ts.mustExec("SELECT v FROM ck WHERE id = 1 AND region IN ('us', 'eu', 'asia')")
	if k := ticketKind(t, info); k != "lookup" {
		t.Errorf("ticket %q, want a lookup", k)
	}
	sameRows(t, "composite", ts.fetch(info), []string{"1", "2"})
	// Combinations are told apart whole: ('ab', 'c') is not ('a', 'bc').
	ts.mustExec("CREATE TABLE ss (a VARCHAR, b VARCHAR, PRIMARY KEY (a, b))")
	ts.mustUpdate("INSERT INTO ss VALUES ('ab', 'c'), ('a', 'bc')")
	sameRows(t, "two string keys", ts.rows("SELECT * FROM ss WHERE a IN ('ab', 'a') AND b IN ('c', 'bc')"), []string{"ab|c", "a|bc"})
	if k := ticketKind(t, ts.mustExec("SELECT v FROM ck WHERE id = 1")); k != "query" {
		t.Errorf("a part of the key that is not its leading columns: ticket %q, want a query", k)
	}
	// The leading columns: a prefix lookup.
	info = ts.mustExec("SELECT id, v FROM ck WHERE region = 'eu'")
	if k := ticketKind(t, info); k != "lookup" {
		t.Errorf("the key's leading column: ticket %q, want a lookup", k)
	}
	sameRows(t, "prefix", ts.fetch(info), []string{"1|1", "2|3"})
}

// A plain scan of a primary-key table, in SQL or by a PATH descriptor,
// reads the state: one row per live key.
func TestPKPlainScan(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec(pkDDL)
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 5), 1))
	ts.mustIngest("kv", "append", kvRows(t, ts.mem, ints(0, 5), 2))
	ts.mustUpdate("DELETE FROM kv WHERE id = 0")
	want := []string{"1|us|2|1", "2|eu|2|2", "3|us|2|3", "4|eu|2|4"}
	info := ts.mustExec("SELECT * FROM kv")
	for _, ep := range info.GetEndpoint() {
		if raw := ep.GetTicket().GetTicket(); !bytes.Contains(raw, []byte(`"kind":"scan"`)) {
			t.Errorf("a plain scan of a PK table has ticket %q, want a scan", raw)
		}
	}
	if n := info.GetTotalRecords(); n != -1 {
		t.Errorf("a plain scan of a PK table announces %d rows, want -1 (the state is read at DoGet)", n)
	}
	sameRows(t, "SELECT *", ts.fetch(info), want)
	info, err := ts.cl.Client.GetFlightInfo(testCtx(t), &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"kv"}})
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "PATH descriptor", ts.fetch(info), want)
	// A ticket planned before a write reads the state at DoGet.
	info = ts.mustExec("SELECT id FROM kv")
	ts.mustUpdate("DELETE FROM kv WHERE id = 4")
	sameRows(t, "a ticket planned before a DELETE", ts.fetch(info), []string{"1", "2", "3"})
	sameRows(t, "columns", ts.rows("SELECT n, id FROM kv"), []string{"1|1", "2|2", "3|3"})
}

// The changelog view shows what the writes produced.
func TestPKChangelog(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE c (id BIGINT, v DOUBLE, PRIMARY KEY (id))")
	ts.mustUpdate("INSERT INTO c VALUES (1, 1.0), (2, 2.0)")
	ts.mustUpdate("INSERT INTO c VALUES (1, 1.5)")
	ts.mustUpdate("UPDATE c SET v = 2.5 WHERE id = 2")
	ts.mustUpdate("DELETE FROM c WHERE id = 1")
	sameRows(t, "changelog", ts.rows(`SELECT _change_type, id, v FROM "c$changelog"`), []string{
		"+I|1|1", "+I|2|2", "-U|1|1", "+U|1|1.5", "-U|2|2", "+U|2|2.5", "-D|1|1.5",
	})
}

// A lookup answers what the engine answers for the same query: each shape
// is run as written (a lookup) and with "AND true" (which the lookup
// parser declines, so the engine runs it), over INTEGER and VARCHAR keys,
// with values out of the key's range, negative, quoted and repeated.
func TestPKLookupMatchesEngine(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE lk (k INTEGER, s VARCHAR, v DOUBLE, PRIMARY KEY (k, s)) WITH ('bucket.num'='4')")
	found := 0
	ts.mustUpdate(`INSERT INTO lk SELECT (i % 50) - 25, CASE WHEN i % 3 = 0 THEN 'a''b' ELSE 's' || (i % 7) END, i FROM range(0, 400) t(i)`)
	for _, where := range []string{
		"k = 3 AND s = 's3'",
		"s = 'a''b' AND k IN (-25, -24, 0, 24, 25)",
		"k IN (1, 2, 3, 2, 1) AND s IN ('s1', 's2', 's1', 'nope')",
		"k = 3000000000 AND s = 's1'",
		"k = -2147483649 AND s IN ('s1')",
		"k IN (-9223372036854775808, 9223372036854775807, 18446744073709551616) AND s = 's1'",
		// Prefix lookups: the key's leading column.
		"k = 3",
		"k IN (1, -25, 24, 2, 1, 99)",
		"k = 3000000000",
	} {
		sql := "SELECT k, s, v FROM lk WHERE " + where
		info := ts.mustExec(sql)
		if k := ticketKind(t, info); k != "lookup" {
			t.Errorf("%s: ticket %q, want a lookup", sql, k)
		}
		got := ts.fetch(info)
		found += len(got)
		sameRows(t, sql, got, ts.rows(sql+" AND true"))
	}
	if found < 5 {
		t.Errorf("the lookups found %d rows in all: the cases do not exercise found keys", found)
	}
}

// Concurrent UPDATEs of the same rows lose no update: each reads the rows,
// and a write of rows changed since is refused and the statement runs
// again. Concurrent DELETEs of a row count it once.
func TestPKConcurrentDMLIsolated(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE ctr (id BIGINT, n BIGINT, PRIMARY KEY (id)) WITH ('bucket.num'='2')")
	ts.mustUpdate("INSERT INTO ctr VALUES (1, 0), (2, 0), (3, 0)")
	const clients, each = 4, 8
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				sql := "UPDATE ctr SET n = n + 1 WHERE id = 1"
				if i%2 == 1 {
					sql = "UPDATE ctr SET n = n + 1 WHERE id <= 2"
				}
				if _, err := ts.update(sql); err != nil {
					errs <- err
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("update: %v", err)
	}
	sameRows(t, "counters", ts.rows("SELECT id, n FROM ctr"), []string{
		fmt.Sprintf("1|%d", clients*each), fmt.Sprintf("2|%d", clients*each/2), "3|0"})

	var deleted atomic.Int64
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := ts.update("DELETE FROM ctr WHERE n > 0")
			if err != nil {
				t.Errorf("delete: %v", err)
			}
			deleted.Add(n)
		}()
	}
	wg.Wait()
	if n := deleted.Load(); n != 2 {
		t.Errorf("concurrent DELETEs report %d rows deleted in all, want 2", n)
	}
	sameRows(t, "after deletes", ts.rows("SELECT id, n FROM ctr"), []string{"3|0"})
}
