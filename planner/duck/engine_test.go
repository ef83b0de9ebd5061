package duck

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/scan"
)

func TestSelectStar(t *testing.T) {
	e, _, ft := withEvents(t)
	got := query(t, e, "SELECT * FROM events ORDER BY id LIMIT 3")
	wantRows(t, got,
		"0|a|0|2025-03-01T00:00:00Z",
		"1|b|1.5|2025-03-01T01:00:00Z",
		"2|c|3|2025-03-01T02:00:00Z")
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	if !got.schema.Equal(want) {
		t.Errorf("schema %s, want %s", got.schema, want)
	}
	if n := len(query(t, e, "SELECT * FROM events").rows); n != 30 {
		t.Errorf("SELECT * returned %d rows, want 30", n)
	}
	if o, c := ft.opened.Load(), ft.closed.Load(); o != 6 || c != 6 {
		t.Errorf("parts opened %d, closed %d; want 6 and 6 (3 parts, 2 queries)", o, c)
	}
}

func TestProjectionPushdown(t *testing.T) {
	e, _, ft := withEvents(t)
	for _, tc := range []struct {
		sql  string
		cols []int
	}{
		{"SELECT kind FROM events", []int{1}},
		{"SELECT amount, id FROM events WHERE kind = 'a'", nil}, // any order of {0,1,2}
		{"SELECT ts FROM events", []int{3}},
		{"SELECT count(*) FROM events", []int{0}}, // a cheap column for row counts
		{"SELECT * FROM events", []int{0, 1, 2, 3}},
	} {
		query(t, e, tc.sql)
		got := ft.lastRequest().Columns
		if tc.cols == nil {
			sorted := slices.Sorted(slices.Values(got))
			if !slices.Equal(sorted, []int{0, 1, 2}) {
				t.Errorf("%s: scanned columns %v, want 0, 1, 2", tc.sql, got)
			}
			continue
		}
		if !slices.Equal(got, tc.cols) {
			t.Errorf("%s: scanned columns %v, want %v", tc.sql, got, tc.cols)
		}
	}
	if got := query(t, e, "SELECT count(*) FROM events").rows[0][0]; got != "30" {
		t.Errorf("count(*) = %s, want 30", got)
	}
}

func TestFilterGroupOrderLimit(t *testing.T) {
	e, _, _ := withEvents(t)
	wantRows(t, query(t, e, "SELECT id FROM events WHERE amount > 30 AND kind <> 'c' ORDER BY id DESC LIMIT 4"),
		"28", "27", "25", "24")
	wantRows(t, query(t, e, `SELECT kind, count(*), count(amount), sum(amount), min(id), max(ts)
		FROM events GROUP BY kind ORDER BY kind`),
		"a|10|9|189|0|2025-03-02T03:00:00Z",
		"b|10|9|189|1|2025-03-02T04:00:00Z",
		"c|10|9|189|2|2025-03-02T05:00:00Z")
	wantRows(t, query(t, e, "SELECT kind FROM events GROUP BY kind HAVING sum(id) > 140 ORDER BY 1"),
		"b", "c")
	wantRows(t, query(t, e, "SELECT id FROM events WHERE amount IS NULL ORDER BY id"), "9", "19", "29")
	wantRows(t, query(t, e, "SELECT id FROM events WHERE ts >= TIMESTAMPTZ '2025-03-02 04:00:00+00' ORDER BY id OFFSET 1"),
		"29")
}

func TestJoins(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	ev := eventsRecord(mem, 30)
	defer ev.Release()
	ft := addTable(t, r, "default.events", ev, 4)
	users := eventsRecord(mem, 5)
	defer users.Release()
	addTable(t, r, "default.users", users, 2)
	e := newTestEngine(t, r)

	wantRows(t, query(t, e, `SELECT u.id, count(*) FROM events e JOIN users u ON e.id % 5 = u.id
		GROUP BY u.id ORDER BY u.id`), "0|6", "1|6", "2|6", "3|6", "4|6")

	before := ft.requestCount()
	wantRows(t, query(t, e, `SELECT a.id, b.id FROM events a JOIN events b ON a.id = b.id + 10
		WHERE a.kind = 'a' ORDER BY a.id LIMIT 3`), "12|2", "15|5", "18|8")
	if n := ft.requestCount() - before; n != 2 {
		t.Errorf("self-join planned %d scans, want 2 independent ones", n)
	}
	// The two scans of a self-join are independent: each reads all rows.
	wantRows(t, query(t, e, "SELECT count(*) FROM events a, events b"), "900")
	wantRows(t, query(t, e, "SELECT count(*) FROM events WHERE id IN (SELECT id + 1 FROM users)"), "5")
}

func TestCTEAndWindow(t *testing.T) {
	e, _, _ := withEvents(t)
	wantRows(t, query(t, e, `WITH big AS (SELECT * FROM events WHERE amount > 30),
		per AS (SELECT kind, count(*) AS n FROM big GROUP BY kind)
		SELECT kind, n FROM per ORDER BY kind`), "a|3", "b|3", "c|2")
	wantRows(t, query(t, e, `SELECT id, sum(id) OVER (PARTITION BY kind ORDER BY id) AS running,
		row_number() OVER (ORDER BY id DESC) AS rn, lag(id) OVER (ORDER BY id) AS prev
		FROM events WHERE id < 4 ORDER BY id`),
		"0|0|4|(null)", "1|1|3|0", "2|2|2|1", "3|3|1|2")
	// A CTE named like a Lakestream table shadows it, with DuckDB's scoping.
	wantRows(t, query(t, e, "WITH events AS (SELECT 42 AS id) SELECT id FROM events"), "42")
	wantRows(t, query(t, e, "VALUES (1, 'x'), (2, 'y')"), "1|x", "2|y")
	wantRows(t, query(t, e, "FROM events SELECT max(id)"), "29")
}

func TestParameters(t *testing.T) {
	e, _, _ := withEvents(t)
	wantRows(t, query(t, e, "SELECT count(*) FROM events WHERE id >= ? AND kind = ?", 20, "a"), "3")
	wantRows(t, query(t, e, "SELECT count(*) FROM events WHERE id >= $2 AND kind = $1", "b", int32(20)), "3")
	wantRows(t, query(t, e, "SELECT id FROM events WHERE ts = ?", testEpoch.Add(5*3600e9)), "5")
	wantRows(t, query(t, e, "SELECT ?::DOUBLE * 2, ?::BLOB, ? IS NULL", 1.25, []byte("ab"), nil), "2.5|YWI=|true") // binary prints as base64
	if _, err := tryQuery(e, "SELECT * FROM events WHERE id = ?"); err == nil {
		t.Error("missing argument: no error")
	}
	if _, err := tryQuery(e, "SELECT ?", struct{}{}); err == nil {
		t.Error("unsupported argument type: no error")
	}
}

func TestDatabasesAndQuotedNames(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	small := eventsRecord(mem, 3)
	defer small.Release()
	big := eventsRecord(mem, 7)
	defer big.Release()
	addTable(t, r, "default.events", small, 2)
	addTable(t, r, "mydb.events", big, 2)
	addTable(t, r, "default.Events", big, 5)
	addTable(t, r, "My DB.odd name", small, 5)
	e := newTestEngine(t, r)

	for _, tc := range []struct{ sql, want string }{
		{"SELECT count(*) FROM events", "3"},
		{`SELECT count(*) FROM "default".events`, "3"},
		{"SELECT count(*) FROM mydb.events", "7"},
		{`SELECT count(*) FROM "mydb"."events"`, "7"},
		{"SELECT count(*) FROM mydb . events AS e WHERE e.id > 1", "5"},
		{"SELECT max(events.id) FROM mydb.events", "6"},
		{`SELECT count(*) FROM "Events"`, "7"},
		{`SELECT count(*) FROM "My DB"."odd name"`, "3"},
		{`SELECT count(*) FROM "default".events a JOIN mydb.events b USING (id)`, "3"},
		{`SELECT count(*) FROM (SELECT id FROM mydb.events UNION ALL SELECT id FROM events)`, "10"},
		{`SELECT (SELECT count(*) FROM mydb.events WHERE id < x.id) FROM events x WHERE id = 2`, "2"},
		{`EXPLAIN SELECT * FROM mydb.events`, ""},
		{`SELECT count(*) FROM information_schema.tables`, "0"},
		// DuckDB reports byte offsets; comments may sit inside a name.
		{"SELECT count(*), 'ééé→' FROM mydb /* c */ . -- d\n events", "7"},
		{`SELECT count(*) FROM mydb.events WHERE 'mydb.events' <> ? OR id >= 0`, ""},
	} {
		var args []any
		if strings.Contains(tc.sql, "?") {
			args = []any{"x"}
		}
		got, err := tryQuery(e, tc.sql, args...)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if tc.want != "" && (len(got.rows) != 1 || got.rows[0][0] != tc.want) {
			t.Errorf("%s = %v, want %s", tc.sql, got.rows, tc.want)
		}
	}
	// A qualified name DuckDB owns must not fall back to a bare Lakestream
	// name: main.events is not default.events.
	for _, sql := range []string{"SELECT * FROM main.events", "SELECT * FROM memory.mydb.events", "SELECT * FROM nodb.events"} {
		if _, err := tryQuery(e, sql); !errors.Is(err, scan.ErrTableNotFound) {
			t.Errorf("%s: error %v, want ErrTableNotFound", sql, err)
		}
	}
}

func TestUnknownTableAndSyntaxError(t *testing.T) {
	e, _, _ := withEvents(t)
	for _, sql := range []string{"SELECT * FROM nope", "SELECT * FROM events JOIN mydb.nope USING (id)"} {
		_, err := tryQuery(e, sql)
		if !errors.Is(err, scan.ErrTableNotFound) || !strings.Contains(err.Error(), "nope") {
			t.Errorf("%s: error %v, want ErrTableNotFound naming nope", sql, err)
		}
	}
	_, _, err := e.Describe(context.Background(), "SELECT * FROM nope")
	if !errors.Is(err, scan.ErrTableNotFound) {
		t.Errorf("Describe of unknown table: error %v, want ErrTableNotFound", err)
	}

	_, err = tryQuery(e, "SELECT id FROM events WHERE kind = 'a' ORDER id")
	var de *Error
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "syntax error") || !strings.Contains(err.Error(), "LINE 1") {
		t.Errorf("syntax error: %v, want DuckDB's parser error with its position", err)
	}
	if _, err := tryQuery(e, "SELECT nocolumn FROM events"); err == nil || errors.Is(err, scan.ErrTableNotFound) {
		t.Errorf("unknown column: %v, want a binder error", err)
	}
}

func TestDescribe(t *testing.T) {
	e, _, ft := withEvents(t)
	res, params, err := e.Describe(context.Background(),
		"SELECT id, kind, sum(amount) AS total FROM events WHERE ts > $1 AND id <> ? GROUP BY ALL")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id: int64", "kind: utf8", "total: float64"}
	if res.NumFields() != len(want) {
		t.Errorf("result schema %s, want %v", res, want)
	}
	for i, f := range res.Fields() {
		if got := f.Name + ": " + f.Type.String(); i >= len(want) || got != want[i] {
			t.Errorf("result field %d = %s, want %v", i, got, want)
		}
	}
	if params.NumFields() != 2 || params.Field(0).Name != "1" ||
		!arrow.TypeEqual(params.Field(0).Type, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}) ||
		!arrow.TypeEqual(params.Field(1).Type, arrow.PrimitiveTypes.Int64) {
		t.Errorf("params = %s, want timestamp[us, UTC] and int64", params)
	}
	if n := ft.requestCount(); n != 0 {
		t.Errorf("Describe planned %d scans, want none", n)
	}

	// A result type that depends on an untyped parameter is unknown until
	// the parameter is bound.
	res, params, err = e.Describe(context.Background(), "SELECT id, ? AS p FROM events")
	if err != nil || res != nil || params.NumFields() != 1 || params.Field(0).Type.ID() != arrow.NULL {
		t.Errorf("Describe with untyped parameter = %v, %v, %v; want nil result schema and one null parameter", res, params, err)
	}
}

func TestEachQueryPlansAFreshScan(t *testing.T) {
	e, r, _ := withEvents(t)
	wantRows(t, query(t, e, "SELECT count(*) FROM events"), "30")
	// Replace the table: the next query sees it; nothing is cached.
	mem := checkedAlloc(t)
	rec := eventsRecord(mem, 4)
	defer rec.Release()
	addTable(t, r, "default.events", rec, 4)
	wantRows(t, query(t, e, "SELECT count(*) FROM events"), "4")
}

func TestEngineClosed(t *testing.T) {
	e, err := New(newFakeResolver(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Query(context.Background(), "SELECT 1"); !errors.Is(err, ErrClosed) {
		t.Errorf("Query after Close: %v, want ErrClosed", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Threads: -1, MemoryLimit: "1GB'; SET x=1"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "threads") || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("Validate = %v, want both problems", err)
	}
	if _, err := New(newFakeResolver(), Options{MemoryLimit: "bogus"}); err == nil {
		t.Error("New with memory limit \"bogus\": no error")
	}
	e, err := New(newFakeResolver(), Options{MemoryLimit: "256MiB", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, _, err := e.Query(context.Background(), "SELECT current_setting('memory_limit'), current_setting('threads')")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if got := rowStrings(rec)[0]; got[0] != "256.0 MiB" || got[1] != "1" {
		t.Errorf("settings = %v, want 256.0 MiB and 1", got)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after last batch: %v, want io.EOF", err)
	}
}

func TestEmptyTable(t *testing.T) {
	mem := checkedAlloc(t)
	r := newFakeResolver()
	rec := eventsRecord(mem, 0)
	defer rec.Release()
	addTable(t, r, "default.empty", rec, 4) // three parts without records
	e := newTestEngine(t, r)
	wantRows(t, query(t, e, "SELECT count(*), max(id) FROM empty"), "0|(null)")
	got := query(t, e, "SELECT * FROM empty")
	if len(got.rows) != 0 || got.schema.NumFields() != 4 {
		t.Errorf("SELECT * FROM empty: %d rows, schema %s", len(got.rows), got.schema)
	}
}
