package flightsrv_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/flightsrv"
	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner/duck"
	"github.com/lakestream/lakestream/tables"
)

// engineResolver is node's resolver without the lake's system tables:
// the store's tables and the catalog's views.
type engineResolver struct{ store *tables.Store }

func (r engineResolver) Table(ctx context.Context, db, name string) (scan.Table, error) {
	return r.store.Table(ctx, db, name)
}

func (r engineResolver) View(ctx context.Context, db, name string) (string, bool) {
	v, err := r.store.Catalog().View(ctx, db, name)
	if err != nil {
		return "", false
	}
	return v.Query, true
}

func (r engineResolver) ViewNames(ctx context.Context) []string {
	views, _ := r.store.Catalog().Views(ctx, "")
	var out []string
	for _, v := range views {
		out = append(out, v.Name)
	}
	return out
}

// startEngineServer is startServer with the query engine, as a node runs it.
func startEngineServer(t testing.TB) *testServer {
	t.Helper()
	base := startServer(t, serverConfig{})
	e, err := duck.New(engineResolver{base.store}, duck.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := flightsrv.New(base.store, e, flightsrv.Options{Mem: base.mem})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.GRPCServer()
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()
	ts := &testServer{t: t, mem: base.mem, store: base.store, cat: base.cat, srv: srv, addr: lis.Addr().String()}
	ts.cl = dial(t, ts.addr)
	t.Cleanup(func() {
		ts.cl.Close()
		g.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
	})
	return ts
}

// rows runs sql and returns its rows as "a|b" strings.
func (ts *testServer) rows(sql string) []string {
	ts.t.Helper()
	return ts.fetch(ts.mustExec(sql))
}

func TestCreateTableAs(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE e (id BIGINT NOT NULL, kind VARCHAR, amount DOUBLE)")
	ts.mustExec("INSERT INTO e VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'a', 3)")

	info := ts.mustExec("CREATE TABLE s WITH ('bucket.num' = '3', 'datalake.enabled' = 'false') AS SELECT kind, sum(amount) AS total, count(*) n FROM e GROUP BY kind")
	if info.GetTotalRecords() != 2 {
		t.Errorf("CREATE TABLE AS reported %d rows, want 2", info.GetTotalRecords())
	}
	sameRows(t, "s", ts.rows("SELECT * FROM s ORDER BY kind"), []string{"a|4.5|2", "b|2.5|1"})
	def, err := ts.cat.Table(testCtx(t), "", "s")
	if err != nil {
		t.Fatal(err)
	}
	if def.Options.BucketNum != 3 || def.Options.DatalakeEnabled {
		t.Errorf("the WITH options were not applied: %+v", def.Options)
	}
	want := "CREATE TABLE default.s (\n    kind VARCHAR,\n    total DOUBLE,\n    n BIGINT\n)\nWITH ('bucket.num' = '3', 'datalake.enabled' = 'false')"
	if got := ts.rows("SHOW CREATE TABLE s"); !slices.Equal(got, []string{"default.s|" + want}) {
		t.Errorf("SHOW CREATE TABLE s = %q, want %q", got, want)
	}

	// The primary key is declared in parentheses; its columns become NOT NULL.
	ts.mustExec("CREATE TABLE k (PRIMARY KEY (id)) AS SELECT id, kind FROM e")
	sameRows(t, "DESCRIBE k", ts.rows("DESCRIBE k"), []string{"id|BIGINT|NO|PRI|(null)|(null)", "kind|VARCHAR|YES|(null)|(null)|(null)"})

	// IF NOT EXISTS on an existing table writes nothing.
	ts.mustExec("CREATE TABLE IF NOT EXISTS s AS SELECT 'x' AS kind, 0.0 AS total, 0 AS n")
	if n := ts.count("s"); n != 2 {
		t.Errorf("s holds %d rows after CREATE TABLE IF NOT EXISTS ... AS, want 2", n)
	}

	// A query that fails leaves no table behind; so do bad columns.
	for sql, code := range map[string]codes.Code{
		"CREATE TABLE bad AS SELECT id, CAST(kind AS INTEGER) AS k FROM e": codes.InvalidArgument,
		"CREATE TABLE bad AS SELECT INTERVAL 1 DAY AS i":                   codes.InvalidArgument,
		"CREATE TABLE bad AS SELECT * FROM nosuch":                         codes.NotFound,
		"CREATE TABLE bad AS SELECT ? AS p":                                codes.InvalidArgument,
		"CREATE TABLE bad (PRIMARY KEY (nope)) AS SELECT 1 AS a":           codes.InvalidArgument,
		"CREATE TABLE e AS SELECT 1 AS a":                                  codes.AlreadyExists,
	} {
		_, err := ts.exec(sql)
		expectCode(t, err, code)
		if _, err := ts.cat.Table(testCtx(t), "", "bad"); err == nil {
			t.Fatalf("%s left table bad behind", sql)
		}
	}
}

func TestViews(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE e (id BIGINT NOT NULL, kind VARCHAR)")
	ts.mustExec("INSERT INTO e VALUES (1, 'a'), (2, 'b'), (3, 'a')")
	ts.mustExec("CREATE VIEW va AS SELECT * FROM e WHERE kind = 'a'")
	ts.mustExec("CREATE VIEW vc AS SELECT count(*) AS c FROM va")
	sameRows(t, "view over a view", ts.rows("SELECT * FROM vc"), []string{"2"})
	sameRows(t, "plain scan of a view", ts.rows("SELECT * FROM va ORDER BY id"), []string{"1|a", "3|a"})
	sameRows(t, "qualified", ts.rows("SELECT id FROM default.va WHERE id > 1"), []string{"3"})

	// New rows show through: a view is expanded when it is queried.
	ts.mustExec("INSERT INTO e VALUES (4, 'a')")
	sameRows(t, "after insert", ts.rows("SELECT * FROM vc"), []string{"3"})
	ts.mustExec("CREATE OR REPLACE VIEW va AS SELECT * FROM e WHERE kind = 'b'")
	sameRows(t, "replaced", ts.rows("SELECT * FROM vc"), []string{"1"})

	for sql, want := range map[string]struct {
		code codes.Code
		msg  string
	}{
		"CREATE VIEW e AS SELECT 1":                     {codes.AlreadyExists, `"default.e" is a table: a view cannot take a table's name`},
		"CREATE TABLE va (a INT)":                       {codes.AlreadyExists, `"default.va" is a view: a table cannot take a view's name`},
		"CREATE VIEW va AS SELECT 1":                    {codes.AlreadyExists, `view "default.va" already exists`},
		"CREATE OR REPLACE VIEW va AS SELECT * FROM vc": {codes.InvalidArgument, "invalid request: view default.va would refer to itself"},
		"CREATE VIEW bad AS SELECT * FROM nosuch":       {codes.NotFound, `Binder Error: table "default.nosuch" does not exist`},
		"CREATE VIEW bad AS SELECT ? AS p":              {codes.InvalidArgument, "invalid request: the query of a view cannot have parameters"},
		"DROP VIEW e":                                   {codes.InvalidArgument, `"default.e" is a table, not a view: drop it with DROP TABLE`},
		"DROP TABLE va":                                 {codes.InvalidArgument, `"default.va" is a view, not a table: drop it with DROP VIEW`},
		"DROP VIEW nosuch":                              {codes.NotFound, `view "default.nosuch" does not exist`},
		"INSERT INTO va VALUES (1, 'a')":                {codes.NotFound, `table "default.va" does not exist`},
	} {
		_, err := ts.exec(sql)
		expectMessage(t, sql, err, want.code, want.msg)
	}
	sameRows(t, "the refused replacement kept the view", ts.rows("SELECT * FROM vc"), []string{"1"})

	info, err := ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{})
	recs := ts.metaResult("GetTables", info, err, schema_ref.Tables)
	if got := columnStrings(recs, 2); !slices.Equal(got, []string{"e", "va", "vc"}) {
		t.Errorf("GetTables names %v", got)
	}
	if got := columnStrings(recs, 3); !slices.Equal(got, []string{"TABLE", "VIEW", "VIEW"}) {
		t.Errorf("GetTables types %v", got)
	}
	info, err = ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}, IncludeSchema: true})
	recs = ts.metaResult("GetTables VIEW", info, err, schema_ref.TablesWithIncludedSchema)
	if got := columnStrings(recs, 2); !slices.Equal(got, []string{"va", "vc"}) {
		t.Errorf("GetTables of VIEW: %v", got)
	}

	ts.mustExec("DROP VIEW va")
	_, err = ts.exec("SELECT * FROM vc")
	expectMessage(t, "a view over a dropped view", err, codes.NotFound, `Binder Error: table "default.va" does not exist`)
	ts.mustExec("DROP VIEW IF EXISTS va")
}

func TestShowAndDescribe(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE DATABASE sales")
	ts.mustExec("CREATE TABLE sales.orders (id BIGINT NOT NULL, region VARCHAR NOT NULL, total DECIMAL(12,2), tags VARCHAR[], PRIMARY KEY (region, id)) PARTITIONED BY (region) WITH ('bucket.num' = '2')")
	ts.mustExec("CREATE TABLE e (id BIGINT)")
	ts.mustExec("CREATE VIEW big AS SELECT id, total * 2 AS double_total FROM sales.orders")
	for sql, want := range map[string][]string{
		"SHOW DATABASES":         {"default", "sales"},
		"SHOW TABLES":            {"big", "e"},
		"SHOW TABLES FROM sales": {"orders"},
		"DESCRIBE sales.orders": {
			"id|BIGINT|NO|PRI|(null)|(null)",
			"region|VARCHAR|NO|PRI|(null)|(null)",
			"total|DECIMAL(12,2)|YES|(null)|(null)|(null)",
			"tags|VARCHAR[]|YES|(null)|(null)|(null)",
		},
		"DESCRIBE big":            {"id|BIGINT|YES|(null)|(null)|(null)", "double_total|DECIMAL(18,2)|YES|(null)|(null)|(null)"},
		"DESCRIBE SELECT 1 share": {"share|INTEGER|YES|(null)|(null)|(null)"},
		"SHOW CREATE VIEW big":    {"default.big|CREATE VIEW default.big AS\nSELECT id, total * 2 AS double_total FROM sales.orders"},
		"SHOW CREATE TABLE sales.orders": {"sales.orders|CREATE TABLE sales.orders (\n    id BIGINT NOT NULL,\n    region VARCHAR NOT NULL,\n" +
			"    total DECIMAL(12,2),\n    tags VARCHAR[],\n    PRIMARY KEY (region, id)\n)\nPARTITIONED BY (region)\nWITH ('bucket.num' = '2')"},
	} {
		sameRows(t, sql, ts.rows(sql), want)
	}
	// The DDL SHOW CREATE TABLE prints creates the same table again.
	ddl := strings.TrimPrefix(ts.rows("SHOW CREATE TABLE sales.orders")[0], "sales.orders|")
	ts.mustExec("DROP TABLE sales.orders")
	ts.mustExec(ddl)
	if got := strings.TrimPrefix(ts.rows("SHOW CREATE TABLE sales.orders")[0], "sales.orders|"); got != ddl {
		t.Errorf("SHOW CREATE TABLE after re-creating from it:\n%s\nwant\n%s", got, ddl)
	}
	// Prepared, as ADBC runs every statement.
	stmt, err := ts.cl.Prepare(testCtx(t), "SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close(testCtx(t))
	if stmt.DatasetSchema().Field(0).Name != "name" {
		t.Errorf("prepared SHOW TABLES dataset schema %v", stmt.DatasetSchema())
	}
	info, err := stmt.Execute(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "prepared SHOW TABLES", ts.fetch(info), []string{"big", "e"})

	for sql, want := range map[string]struct {
		code codes.Code
		msg  string
	}{
		"SHOW TABLES FROM nodb":  {codes.NotFound, `database "nodb" does not exist`},
		"SHOW CREATE TABLE big":  {codes.InvalidArgument, `invalid request: "default.big" is a view: use SHOW CREATE VIEW`},
		"SHOW CREATE VIEW e":     {codes.InvalidArgument, `invalid request: "default.e" is a table: use SHOW CREATE TABLE`},
		"SHOW CREATE TABLE nope": {codes.NotFound, `table "default.nope" does not exist`},
		"DESCRIBE nope":          {codes.NotFound, `Binder Error: table "default.nope" does not exist`},
		"SHOW CREATE INDEX i":    {codes.InvalidArgument, "invalid statement: syntax error at position 12: expected TABLE or VIEW after SHOW CREATE"},
	} {
		_, err := ts.exec(sql)
		expectMessage(t, sql, err, want.code, want.msg)
	}
}

// Messages are pinned: one sentence each, no server paths, and no INTERNAL
// for anything a client can write.
func TestClientErrorMessages(t *testing.T) {
	ts := startEngineServer(t)
	ts.mustExec("CREATE TABLE t (id BIGINT, kind VARCHAR)")
	long := strings.Repeat("x", 200)
	for sql, want := range map[string]struct {
		code codes.Code
		msg  string
	}{
		"SELECT * FROM nosuch":                                      {codes.NotFound, `Binder Error: table "default.nosuch" does not exist`},
		"SELECT * FROM default.nosuch":                              {codes.NotFound, `Binder Error: table "default.nosuch" does not exist`},
		"DROP TABLE nosuch":                                         {codes.NotFound, `table "default.nosuch" does not exist`},
		"DROP DATABASE nosuch":                                      {codes.NotFound, `database "nosuch" does not exist`},
		"CREATE TABLE t (a INT)":                                    {codes.AlreadyExists, `table "default.t" already exists`},
		"CREATE TABLE " + long + " (a INT)":                         {codes.InvalidArgument, `create table "default.` + long + `": table name "` + strings.Repeat("x", 64) + `"... (200 bytes) is longer than the limit of 128 bytes`},
		`CREATE TABLE "%%%" (a INT)`:                                {codes.InvalidArgument, `create table "default.%%%": table name "%%%" must not contain '%': the name is a directory of the lake's table location`},
		"SELECT * FROM lakestream_scan(NULL, NULL)":                 {codes.InvalidArgument, "Binder Error: lakestream_scan takes two strings, the database and the table name, not NULL"},
		"SELECT * FROM changes('t', 'latest') WHERE kind LIKE 'b%'": {codes.InvalidArgument, `invalid statement: changes(): WHERE: expected a comparison after kind at "LIKE 'b%'"`},
	} {
		_, err := ts.exec(sql)
		expectMessage(t, sql, err, want.code, want.msg)
	}
	sameRows(t, "SELECT 1 share", ts.rows("SELECT 1 share, 2 value"), []string{"1|2"})
	sameRows(t, "default.t", ts.rows("SELECT count(*) FROM default.t"), []string{"0"})
}

// expectMessage checks the code and that the message is want, or starts
// with it followed by more detail (DuckDB's LINE context, a hint).
func expectMessage(t *testing.T, what string, err error, code codes.Code, want string) {
	t.Helper()
	st, ok := status.FromError(err)
	if err == nil || !ok {
		t.Errorf("%s: error %v, want %v %q", what, err, code, want)
		return
	}
	if st.Code() != code || !(st.Message() == want || strings.HasPrefix(st.Message(), want+"\n") || strings.HasPrefix(st.Message(), want+";")) {
		t.Errorf("%s:\n got %v %q\nwant %v %q", what, st.Code(), st.Message(), code, want)
	}
	if strings.Contains(st.Message(), "/tmp/") || strings.Contains(st.Message(), ".go:") {
		t.Errorf("%s: the message shows a server path: %q", what, st.Message())
	}
}
