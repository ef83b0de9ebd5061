package node

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rawCatalog changes the stopped node's catalog.db directly, as a catalog
// written by an older release (before the name rules) could hold it.
func rawCatalog(t testing.TB, dir string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func mustExec(t testing.TB, cl *flightsql.Client, sqls ...string) {
	t.Helper()
	for _, s := range sqls {
		if _, err := cl.ExecuteUpdate(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// Table names that collide once joined (`"default.x".t` and `default."x.t"`
// are both "default.x.t") made /metrics answer 500 for duplicate label
// sets, and a name that is not UTF-8 would panic in a collector. Names like
// these can no longer be created, but a catalog may hold them: /metrics
// serves every table under a label of its own and skips only the metric it
// cannot build.
func TestMetricsSurviveTableNames(t *testing.T) {
	dir := t.TempDir()
	n, stop, done := startNode(t, dir)
	mustExec(t, client(t, n.Addr()),
		"CREATE DATABASE dx",
		"CREATE TABLE dx.t (a BIGINT) WITH ('datalake.enabled'='false')",
		"CREATE TABLE xt (a BIGINT) WITH ('datalake.enabled'='false')",
		"CREATE TABLE notutf8 (a BIGINT) WITH ('datalake.enabled'='false')",
		"CREATE TABLE fine (a BIGINT) WITH ('datalake.enabled'='false')")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rawCatalog(t, dir,
		`UPDATE databases SET name = 'default.x' WHERE name = 'dx'`,
		`UPDATE tables SET db = 'default.x' WHERE db = 'dx'`,
		`UPDATE tables SET name = 'x.t' WHERE name = 'xt'`,
		`UPDATE tables SET name = CAST(X'6261640AFF' AS TEXT) WHERE name = 'notutf8'`)

	n, stop, done = startNode(t, dir)
	defer func() { stop(); <-done }()
	code, body := get(t, n, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d:\n%.1000s", code, body)
	}
	for _, want := range []string{
		`lakestream_log_committed_offset{bucket="0",table="\"default.x\".t"} 0`,
		`lakestream_log_committed_offset{bucket="0",table="default.\"x.t\""} 0`,
		`lakestream_log_committed_offset{bucket="0",table="default.fine"} 0`,
		`lakestream_cache_bytes`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The table whose name is not UTF-8 has no series; the registry
	// reported its metrics as invalid, and the rest were served.
	if got := strings.Count(body, "lakestream_log_committed_offset{"); got != 3 {
		t.Errorf("%d series of lakestream_log_committed_offset, want the 3 tables with UTF-8 names", got)
	}
	if code, _ := get(t, n, "/"); code != http.StatusOK {
		t.Errorf("the status page answered %d", code)
	}
}

// syncBuffer is a log sink for a logger used by several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node starts with a table whose log is damaged, a table whose lake
// table is lost (iceberg.db deleted) and a data directory no table owns:
// it serves the good table, refuses the others with FailedPrecondition
// naming the table and the reason, keeps the directory, and reports all
// of it in the log, on the status page and in the metrics.
func TestStartQuarantinesAndReports(t *testing.T) {
	dir := t.TempDir()
	var logs syncBuffer
	cfg := Config{DataDir: dir, Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Tiering: TieringManual,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	n, stop, done := startNodeWith(t, cfg)
	cl := client(t, n.Addr())
	mustExec(t, cl,
		"CREATE TABLE good (id BIGINT) WITH ('datalake.enabled'='false')",
		"CREATE TABLE bad (id BIGINT) WITH ('datalake.enabled'='false')",
		"CREATE TABLE lakey (id BIGINT)",
		"INSERT INTO good SELECT range FROM range(10)",
		"INSERT INTO bad SELECT range FROM range(10)",
		"INSERT INTO lakey SELECT range FROM range(10)")
	ctx := context.Background()
	lakey, err := n.Tables().Get(ctx, "", "lakey")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Lake().Round(ctx, lakey.Def().ID); err != nil {
		t.Fatal(err)
	}
	bad, err := n.Tables().Get(ctx, "", "bad")
	if err != nil {
		t.Fatal(err)
	}
	badDir := filepath.Join(dir, "tables", strconv.FormatInt(bad.Def().ID, 10))
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	segs, err := filepath.Glob(filepath.Join(badDir, "0", "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment of bad: %v", err)
	}
	if err := os.Remove(segs[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(segs[0], 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"iceberg.db", "iceberg.db-wal", "iceberg.db-shm"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	orphan := filepath.Join(dir, "tables", "999")
	if err := os.MkdirAll(filepath.Join(orphan, "0"), 0o755); err != nil {
		t.Fatal(err)
	}

	n, stop, done = startNodeWith(t, cfg)
	defer func() { stop(); <-done }()
	cl = client(t, n.Addr())
	if got := queryInt64(t, cl, "SELECT count(*)::BIGINT FROM good"); got != 10 {
		t.Errorf("good holds %d rows, want 10", got)
	}
	mustExec(t, cl, "INSERT INTO good VALUES (10)")
	segName := filepath.Base(segs[0])
	for _, tc := range []struct{ sql, want string }{
		{"SELECT count(*) FROM bad", segName},
		{"INSERT INTO bad VALUES (1)", segName},
		{"SELECT count(*) FROM lakey", "lake table lost"},
		{`SELECT * FROM "lakey$changelog"`, "lake table lost"},
	} {
		_, err := cl.Execute(ctx, tc.sql)
		if err == nil {
			_, err = cl.ExecuteUpdate(ctx, tc.sql)
		}
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "quarantined") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want FailedPrecondition naming the quarantine and %q", tc.sql, err, tc.want)
		}
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("the orphan directory after start: %v, want kept", err)
	}

	_, metrics := get(t, n, "/metrics")
	for _, want := range []string{
		`lakestream_table_quarantined{part="log",table="default.bad"} 1`,
		`lakestream_table_quarantined{part="lake",table="default.lakey"} 1`,
		`lakestream_orphan_table_dirs 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	_, page := get(t, n, "/")
	for _, want := range []string{"default.bad", segName, "default.lakey", "lake table lost", orphan} {
		if !strings.Contains(page, want) {
			t.Errorf("the status page lacks %q", want)
		}
	}
	for _, want := range []string{"table quarantined", "table=default.bad", "table=default.lakey", "dir=" + orphan} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// The limits on definitions reach a client as InvalidArgument naming the
// limit, from DDL, ALTER TABLE and an ingest that creates its table, and
// nothing of a refused definition is stored.
func TestLimitsReachClientsAsInvalidArgument(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	ctx := context.Background()
	mustExec(t, cl, "CREATE TABLE t (a BIGINT)")
	deep := strings.Repeat("STRUCT(a ", 40) + "BIGINT" + strings.Repeat(")", 40)
	for _, tc := range []struct{ sql, want string }{
		{"CREATE TABLE ns (c " + deep + ")", "deeper than the limit of 32 levels"},
		{"ALTER TABLE t ADD COLUMN c " + deep, "deeper than the limit of 32 levels"},
		{`CREATE TABLE "x.t" (a BIGINT)`, `must not contain "."`},
		{`CREATE TABLE "t$lake" (a BIGINT)`, `must not contain "$"`},
	} {
		_, err := cl.ExecuteUpdate(ctx, tc.sql)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: %v, want InvalidArgument with %q", tc.sql, err, tc.want)
		}
	}
	var dt arrow.DataType = arrow.PrimitiveTypes.Int64
	for range 40 {
		dt = arrow.ListOf(dt)
	}
	for _, tc := range []struct {
		field arrow.Field
		want  string
	}{
		{arrow.Field{Name: "deep", Type: dt, Nullable: true}, "deeper than the limit of 32 levels"},
		{arrow.Field{Name: "a.b", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, `must not contain "."`},
	} {
		schema := arrow.NewSchema([]arrow.Field{tc.field}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).AppendNull()
		rec := b.NewRecordBatch()
		b.Release()
		rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		_, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "ingested", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
			IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate}})
		rec.Release()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ingest creating a table with %s: %v, want InvalidArgument with %q", tc.field.Name, err, tc.want)
		}
	}
	defs, err := n.Tables().Catalog().AllTables(ctx)
	if err != nil || len(defs) != 1 || len(defs[0].Columns) != 1 {
		t.Errorf("tables after the refused definitions: %v, %v; want t with its one column", defs, err)
	}
}
