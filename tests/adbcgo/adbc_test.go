package adbcgo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	rows      = 20_000
	batchRows = 5_000
	tsBase    = 1_700_000_000_000_000 // µs
)

var kinds = []string{"click", "view", "buy", "return", "löschen"}

// event is one generated row: deterministic, and with amounts that are
// multiples of 1/4, so sums are exact in float64 whatever the order.
type event struct {
	id     int64
	amount float64
	kind   string
	ts     int64 // µs since the epoch, UTC
}

func eventAt(id int64) event {
	return event{id: id, amount: float64(id*7919%1000) / 4, kind: kinds[id%int64(len(kinds))], ts: tsBase + id*1000}
}

var eventsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

func eventBatch(mem memory.Allocator, from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, eventsSchema)
	defer b.Release()
	for id := from; id < from+n; id++ {
		e := eventAt(id)
		b.Field(0).(*array.Int64Builder).Append(e.id)
		b.Field(1).(*array.Float64Builder).Append(e.amount)
		b.Field(2).(*array.StringBuilder).Append(e.kind)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ts))
	}
	return b.NewRecordBatch()
}

// client is one ADBC database and connection to a server, over a checked
// allocator that must be back to zero when the test ends.
type client struct {
	t    *testing.T
	mem  *memory.CheckedAllocator
	db   adbc.Database
	cnxn adbc.Connection
}

func connect(t *testing.T, s *server) *client {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	db, err := flightsql.NewDriver(mem).NewDatabase(map[string]string{adbc.OptionKeyURI: s.uri()})
	if err != nil {
		t.Fatal(err)
	}
	cnxn, err := db.Open(testCtx(t))
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	c := &client{t: t, mem: mem, db: db, cnxn: cnxn}
	t.Cleanup(func() {
		if err := cnxn.Close(); err != nil {
			t.Errorf("close connection: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("close database: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return c
}

// statement returns a new statement closed at the end of the test.
func (c *client) statement() adbc.Statement {
	c.t.Helper()
	st, err := c.cnxn.NewStatement()
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if err := st.Close(); err != nil {
			c.t.Errorf("close statement: %v", err)
		}
	})
	return st
}

func (c *client) exec(sql string) {
	c.t.Helper()
	st := c.statement()
	if err := st.SetSqlQuery(sql); err != nil {
		c.t.Fatal(err)
	}
	if _, err := st.ExecuteUpdate(testCtx(c.t)); err != nil {
		c.t.Fatalf("%s: %v", sql, err)
	}
}

// ingest bulk-loads [from, from+n) into table with the driver's ingest
// (adbc.ingest.target_table), in batches of batchRows, and returns the
// row count the server reports.
func (c *client) ingest(table, mode string, from, n int64) int64 {
	c.t.Helper()
	var recs []arrow.RecordBatch
	for b := from; b < from+n; b += batchRows {
		recs = append(recs, eventBatch(c.mem, b, min(batchRows, from+n-b)))
	}
	rdr, err := array.NewRecordReader(eventsSchema, recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		c.t.Fatal(err)
	}
	defer rdr.Release()
	st := c.statement()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: mode} {
		if err := st.SetOption(k, v); err != nil {
			c.t.Fatalf("%s=%s: %v", k, v, err)
		}
	}
	if err := st.BindStream(testCtx(c.t), rdr); err != nil {
		c.t.Fatal(err)
	}
	got, err := st.ExecuteUpdate(testCtx(c.t))
	if err != nil {
		c.t.Fatalf("ingest into %s: %v", table, err)
	}
	return got
}

// result is a query's output as one Go value per cell.
type result struct {
	names []string
	rows  [][]any
}

// query prepares sql, binds each set of parameters in turn (one row of
// values per set, typed from the Go values) and runs it once per set; with
// no sets it runs sql unprepared once. It returns one result per run.
func (c *client) query(sql string, paramSets ...[]any) ([]result, error) {
	c.t.Helper()
	st := c.statement()
	if err := st.SetSqlQuery(sql); err != nil {
		return nil, err
	}
	if len(paramSets) == 0 {
		r, err := c.run(st)
		return []result{r}, err
	}
	if err := st.Prepare(testCtx(c.t)); err != nil {
		return nil, err
	}
	var out []result
	for _, params := range paramSets {
		rec := c.paramRecord(params)
		err := st.Bind(testCtx(c.t), rec)
		rec.Release()
		if err != nil {
			return out, err
		}
		r, err := c.run(st)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *client) mustQuery(sql string, paramSets ...[]any) []result {
	c.t.Helper()
	res, err := c.query(sql, paramSets...)
	if err != nil {
		c.t.Fatalf("%s %v: %v", sql, paramSets, err)
	}
	return res
}

func (c *client) run(st adbc.Statement) (result, error) {
	rdr, _, err := st.ExecuteQuery(testCtx(c.t))
	if err != nil {
		return result{}, err
	}
	defer rdr.Release()
	var r result
	for _, f := range rdr.Schema().Fields() {
		r.names = append(r.names, f.Name)
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := make([]any, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = cell(col, i)
			}
			r.rows = append(r.rows, row)
		}
	}
	return r, rdr.Err()
}

// cell is one value as int64, float64, string, arrow.Timestamp or nil.
func cell(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Timestamp:
		return a.Value(i)
	}
	return col.ValueStr(i)
}

// paramRecord builds the one-row record of parameters p1, p2, ... that
// ADBC binds to the placeholders in order.
func (c *client) paramRecord(params []any) arrow.RecordBatch {
	c.t.Helper()
	fields := make([]arrow.Field, len(params))
	cols := make([]arrow.Array, len(params))
	for i, p := range params {
		var b array.Builder
		switch v := p.(type) {
		case int64:
			ib := array.NewInt64Builder(c.mem)
			ib.Append(v)
			b = ib
		case string:
			sb := array.NewStringBuilder(c.mem)
			sb.Append(v)
			b = sb
		default:
			c.t.Fatalf("parameter %d: unsupported type %T", i+1, p)
		}
		cols[i] = b.NewArray()
		b.Release()
		fields[i] = arrow.Field{Name: fmt.Sprintf("p%d", i+1), Type: cols[i].DataType(), Nullable: true}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	for _, a := range cols {
		a.Release()
	}
	return rec
}

func checkRows(t *testing.T, what string, got result, want [][]any) {
	t.Helper()
	if len(got.rows) != len(want) {
		t.Errorf("%s: %d rows, want %d\n got: %v\nwant: %v", what, len(got.rows), len(want), clip(got.rows), clip(want))
		return
	}
	for i := range want {
		if !slices.Equal(got.rows[i], want[i]) {
			t.Errorf("%s: row %d is %v, want %v", what, i, got.rows[i], want[i])
			return
		}
	}
}

func clip(rows [][]any) [][]any {
	return rows[:min(len(rows), 5)]
}

const eventsDDL = "CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) " +
	"WITH ('bucket.num'='4', 'bucket.key'='id', 'log.compression'='zstd')"

// Create a table, bulk-ingest into it, and read it back: the whole table
// through the zero-copy scan (ZSTD batches), and queries with parameters
// bound in both placeholder styles, re-bound on one prepared statement.
func TestIngestAndQueryWithParameters(t *testing.T) {
	c := connect(t, startServer(t))
	c.exec(eventsDDL)
	if n := c.ingest("events", adbc.OptionValueIngestModeAppend, 0, rows); n != rows {
		t.Fatalf("ingest reported %d rows, want %d", n, rows)
	}

	all := c.mustQuery("SELECT * FROM events")[0]
	if !slices.Equal(all.names, []string{"id", "amount", "kind", "ts"}) {
		t.Errorf("SELECT * columns %v", all.names)
	}
	slices.SortFunc(all.rows, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	want := make([][]any, rows)
	for id := range int64(rows) {
		e := eventAt(id)
		want[id] = []any{e.id, e.amount, e.kind, arrow.Timestamp(e.ts)}
	}
	checkRows(t, "SELECT * FROM events", all, want)

	// "?" placeholders, bound twice on one prepared statement.
	sets := [][]any{{int64(10), "buy"}, {int64(rows - 100), "löschen"}}
	res := c.mustQuery("SELECT count(*) AS n, sum(amount) AS total FROM events WHERE id > ? AND kind = ?", sets...)
	for i, p := range sets {
		var n int64
		var total float64
		for id := p[0].(int64) + 1; id < rows; id++ {
			if e := eventAt(id); e.kind == p[1] {
				n, total = n+1, total+e.amount
			}
		}
		checkRows(t, fmt.Sprintf("count and sum with %v", p), res[i], [][]any{{n, total}})
	}

	// "$n" placeholders, numbered out of their order in the text.
	res = c.mustQuery("SELECT id, kind, ts FROM events WHERE id >= $2 AND id < $1 ORDER BY id DESC", []any{int64(504), int64(500)})
	var wantRange [][]any
	for id := int64(503); id >= 500; id-- {
		e := eventAt(id)
		wantRange = append(wantRange, []any{e.id, e.kind, arrow.Timestamp(e.ts)})
	}
	checkRows(t, "$1 range", res[0], wantRange)

	// A parameter that matches nothing returns no rows, not an error.
	res = c.mustQuery("SELECT id FROM events WHERE kind = ?", []any{"nothing"})
	checkRows(t, "no match", res[0], nil)
}

// GROUP BY, ORDER BY, HAVING and a join across two Lakestream tables, the
// second one created by the driver's ingest (mode create).
func TestAggregatesAndJoins(t *testing.T) {
	c := connect(t, startServer(t))
	c.exec(eventsDDL)
	c.ingest("events", adbc.OptionValueIngestModeAppend, 0, rows)
	if n := c.ingest("recent", adbc.OptionValueIngestModeCreate, rows-1000, 1000); n != 1000 {
		t.Fatalf("ingest (create) reported %d rows", n)
	}

	type agg struct{ n, lo, hi int64 }
	byKind := map[string]*agg{}
	for id := range int64(rows) {
		e := eventAt(id)
		a := byKind[e.kind]
		if a == nil {
			a = &agg{lo: id}
			byKind[e.kind] = a
		}
		a.n, a.hi = a.n+1, id
	}
	names := make([]string, 0, len(byKind))
	for k := range byKind {
		names = append(names, k)
	}
	slices.Sort(names) // DuckDB orders VARCHAR by bytes, as Go does
	var want [][]any
	for _, k := range names {
		a := byKind[k]
		want = append(want, []any{k, a.n, a.lo, a.hi})
	}
	res := c.mustQuery("SELECT kind, count(*) AS n, min(id) AS lo, max(id) AS hi FROM events GROUP BY kind ORDER BY kind")
	checkRows(t, "GROUP BY kind", res[0], want)

	res = c.mustQuery("SELECT kind, count(*) AS n FROM events WHERE id % 3 = ? GROUP BY kind HAVING count(*) > ? ORDER BY n DESC, kind LIMIT 2",
		[]any{int64(1), int64(10)})
	counts := map[string]int64{}
	for id := range int64(rows) {
		if id%3 == 1 {
			counts[eventAt(id).kind]++
		}
	}
	var top [][]any
	for k, n := range counts {
		if n > 10 {
			top = append(top, []any{k, n})
		}
	}
	slices.SortFunc(top, func(a, b []any) int {
		if a[1] != b[1] {
			return int(b[1].(int64) - a[1].(int64))
		}
		return strings.Compare(a[0].(string), b[0].(string))
	})
	checkRows(t, "HAVING with parameters", res[0], top[:2])

	res = c.mustQuery("SELECT e.kind, count(*) AS n, sum(r.amount) AS total FROM events e JOIN recent r ON e.id = r.id "+
		"WHERE e.id >= ? GROUP BY e.kind ORDER BY e.kind", []any{int64(rows - 10)})
	sums := map[string][]any{}
	for id := int64(rows - 10); id < rows; id++ {
		e := eventAt(id)
		if sums[e.kind] == nil {
			sums[e.kind] = []any{e.kind, int64(0), float64(0)}
		}
		s := sums[e.kind]
		s[1], s[2] = s[1].(int64)+1, s[2].(float64)+e.amount
	}
	want = nil
	for _, k := range names {
		if s := sums[k]; s != nil {
			want = append(want, s)
		}
	}
	checkRows(t, "JOIN events with recent", res[0], want)
}

// Errors reach the Go client with the server's message and status: a
// syntax error carries DuckDB's text, an unknown table is NotFound and
// named, and a statement the lockdown refuses fails. The connection keeps
// working after each.
func TestErrors(t *testing.T) {
	c := connect(t, startServer(t))
	c.exec(eventsDDL)
	c.ingest("events", adbc.OptionValueIngestModeAppend, 0, 100)
	for _, tc := range []struct {
		sql    string
		params []any
		status adbc.Status // 0: any
		words  []string
	}{
		{"SELECT id FROM events WHER id > 1", nil, 0, []string{"syntax error", "WHER"}},
		{"SELECT * FROM no_such_table WHERE id > ?", []any{int64(1)}, adbc.StatusNotFound, []string{"no_such_table"}},
		{"SELECT * FROM read_csv('/etc/passwd')", nil, 0, []string{"/etc/passwd"}},
	} {
		var sets [][]any
		if tc.params != nil {
			sets = [][]any{tc.params}
		}
		_, err := c.query(tc.sql, sets...)
		if err == nil {
			t.Errorf("%s: no error", tc.sql)
			continue
		}
		var ae adbc.Error
		if !errors.As(err, &ae) {
			t.Errorf("%s: error %T is not an adbc.Error: %v", tc.sql, err, err)
		} else if tc.status != 0 && ae.Code != tc.status {
			t.Errorf("%s: status %v, want %v (%v)", tc.sql, ae.Code, tc.status, err)
		}
		for _, w := range tc.words {
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w)) {
				t.Errorf("%s: error does not mention %q: %v", tc.sql, w, err)
			}
		}
		res := c.mustQuery("SELECT count(*) FROM events WHERE id < ?", []any{int64(50)})
		checkRows(t, "after "+tc.sql, res[0], [][]any{{int64(50)}})
	}
}
