package duck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/lakestream/lakestream/internal/scan"
)

// TestQueryRefusals: Query runs SELECT and nothing else, and a SELECT
// reaches no file, network or extension (docs/sql.md, "Queries").
func TestQueryRefusals(t *testing.T) {
	e, _, _ := withEvents(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	data := filepath.Join(dir, "data.parquet")
	if err := os.WriteFile(data, []byte("PAR1"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Statements that are not queries: refused before they run.
	notQuery := []string{
		"COPY (SELECT 1) TO '" + out + "'",
		"COPY events TO '" + out + "'",
		"EXPORT DATABASE '" + dir + "'",
		"ATTACH '" + filepath.Join(dir, "x.db") + "' AS x",
		"ATTACH ':memory:' AS m",
		"DETACH memory",
		"INSTALL httpfs",
		"LOAD httpfs",
		"LOAD parquet",
		"SET GLOBAL threads = 1",
		"SET enable_external_access = true",
		"SET lock_configuration = false",
		"RESET threads",
		"SET TimeZone = 'Europe/Paris'",
		"PRAGMA threads = 1",
		"USE memory",
		"CREATE TABLE t (a INT)",
		"CREATE TABLE t AS SELECT * FROM events",
		"CREATE TEMP TABLE t AS SELECT 1",
		"CREATE VIEW v AS SELECT 1",
		"CREATE MACRO m(a) AS a + 1",
		"CREATE SCHEMA s",
		"CREATE SEQUENCE s",
		"INSERT INTO t VALUES (1)",
		"INSERT INTO events VALUES (1, 'a', 1.0, now())",
		"UPDATE t SET a = 1",
		"DELETE FROM t",
		"DROP TABLE t",
		"ALTER TABLE t ADD COLUMN b INT",
		"CALL dbgen(sf = 0)",
		"CHECKPOINT",
		"VACUUM",
		"BEGIN TRANSACTION",
		"PREPARE p AS SELECT 1",
		"EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
		"EXPLAIN CREATE TABLE t AS SELECT 1",
		"SELECT 1; CREATE TABLE t (a INT)",
		"",
	}
	for _, sql := range notQuery {
		if _, err := tryQuery(e, sql); !errors.Is(err, ErrNotQuery) {
			t.Errorf("%q: error %v, want ErrNotQuery", sql, err)
		}
	}

	// Queries that would read files: refused by DuckDB's lockdown.
	external := []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM read_csv_auto('/etc/passwd')",
		"SELECT * FROM '" + filepath.Join(dir, "x.csv") + "'",
		"SELECT * FROM read_text('/etc/hostname')",
		"SELECT * FROM read_blob('/etc/hostname')",
		"SELECT * FROM read_parquet('" + data + "')",
		"SELECT * FROM '" + data + "'",
		"SELECT * FROM read_json('/etc/passwd')",
		"SELECT * FROM glob('/etc/*')",
		"SELECT * FROM read_csv('https://example.com/x.csv')",
		"SELECT * FROM duckdb_extensions()",
	}
	for _, sql := range external {
		_, err := tryQuery(e, sql)
		if err == nil || !strings.Contains(err.Error(), "disabled by configuration") {
			t.Errorf("%q: error %v, want DuckDB's external-access refusal", sql, err)
		}
	}
	// A quoted name DuckDB does not take for a file is a table name.
	if _, err := tryQuery(e, "SELECT * FROM '/etc/passwd'"); !errors.Is(err, scan.ErrTableNotFound) {
		t.Errorf("FROM '/etc/passwd': error %v, want ErrTableNotFound", err)
	}
	// query() runs SQL text, but only a SELECT.
	if _, err := tryQuery(e, "SELECT * FROM query('CREATE TABLE t AS SELECT 1')"); err == nil {
		t.Error("query('CREATE TABLE ...'): no error")
	}

	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("COPY wrote %s (stat: %v)", out, err)
	}
	// Nothing above created anything in DuckDB's catalog.
	wantRows(t, query(t, e, `SELECT (SELECT count(*) FROM duckdb_tables()), (SELECT count(*) FROM duckdb_views() WHERE NOT internal),
		(SELECT count(*) FROM duckdb_databases() WHERE NOT internal), (SELECT count(*) FROM duckdb_schemas() WHERE NOT internal)`),
		"0|0|1|0")
	wantRows(t, query(t, e, `SELECT current_setting('threads'), current_setting('TimeZone'),
		current_setting('enable_external_access'), current_setting('lock_configuration')`), "2|UTC|false|true")
}

// TestDuckDBLockdown checks the lockdown in DuckDB itself, below Query's
// statement check: even a statement that got past it is refused.
func TestDuckDBLockdown(t *testing.T) {
	e := newTestEngine(t, newFakeResolver())
	var c bindings.Connection
	if bindings.Connect(e.db, &c) == bindings.StateError {
		t.Fatal("connect")
	}
	defer bindings.Disconnect(&c)
	dir := t.TempDir()
	for _, tc := range []struct{ sql, want string }{
		{"SET GLOBAL threads = 1", "configuration has been locked"},
		{"SET threads = 1", "configuration has been locked"},
		{"SET enable_external_access = true", "configuration has been locked"},
		{"SET lock_configuration = false", "configuration has been locked"},
		{"SET autoload_known_extensions = true", "configuration has been locked"},
		{"SET TimeZone = 'Europe/Paris'", "configuration has been locked"},
		{"SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"},
		{"COPY (SELECT 1) TO '" + filepath.Join(dir, "x.csv") + "'", "disabled by configuration"},
		{"ATTACH '" + filepath.Join(dir, "x.db") + "' AS x", "disabled by configuration"},
		{"INSTALL httpfs", "disabled by configuration"},
		{"LOAD httpfs", "disabled through configuration"},
	} {
		var res bindings.Result
		state := bindings.Query(c, tc.sql, &res)
		msg := bindings.ResultError(&res)
		bindings.DestroyResult(&res)
		if state != bindings.StateError || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q, want an error containing %q", tc.sql, msg, tc.want)
		}
	}
}

// TestNoTempDirectory: the engine has no temp directory, so SQL has no
// directory it may read. With one, DuckDB adds it to the paths SQL may
// read even with external access off, and its default is ".tmp" under the
// working directory: read_text and glob of it worked. A query over the
// memory limit fails instead of spilling, and writes no file.
func TestNoTempDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	secret := filepath.Join(dir, ".tmp", "secret.txt")
	if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("spilled rows of another query"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := New(newFakeResolver(), Options{Threads: 2, MemoryLimit: "64MiB"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	wantRows(t, query(t, e, `SELECT current_setting('temp_directory'), current_setting('allowed_directories')::VARCHAR,
		current_setting('memory_limit')`), "|[]|64.0 MiB")
	for _, sql := range []string{
		"SELECT * FROM read_text('.tmp/secret.txt')",
		"SELECT * FROM read_text('" + secret + "')",
		"SELECT * FROM read_blob('.tmp/*')",
		"SELECT * FROM glob('.tmp/*')",
		"SELECT * FROM glob('" + filepath.Join(dir, ".tmp", "*") + "')",
	} {
		if _, err := tryQuery(e, sql); err == nil || !strings.Contains(err.Error(), "disabled by configuration") {
			t.Errorf("%s: error %v, want DuckDB's external-access refusal", sql, err)
		}
	}
	// A sort of 30M rows needs ~230 MB: over the limit, with nowhere to spill.
	_, err = tryQuery(e, "SELECT count(*) FROM (SELECT * FROM range(30000000) t(x) ORDER BY x DESC)")
	if err == nil || !strings.Contains(err.Error(), "Out of Memory Error") {
		t.Errorf("a sort over the memory limit: error %v, want DuckDB's out-of-memory error", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the working directory holds %v, want only the test's .tmp: the engine wrote files", entries)
	}
	wantRows(t, query(t, e, "SELECT 42"), "42")
}

// TestQueryTimeout: at the timeout DuckDB's interrupt stops a query that
// is busy inside DuckDB (no Lakestream scan to cancel from Go): Next fails
// with a *QueryTimeoutError, which is a context.DeadlineExceeded naming
// the timeout, and the engine serves the next query.
func TestQueryTimeout(t *testing.T) {
	e, err := New(newFakeResolver(), Options{Threads: 2, QueryTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Hours of work: a cross join counted row by row. DuckDB may run it
	// when the statement starts or at the first fetch.
	s, _, err := e.Query(context.Background(), "SELECT count(*) FROM range(1000000) a, range(10000000) b WHERE a.range + b.range > 0")
	if err == nil {
		_, err = s.Next()
		if cerr := s.Close(); cerr != nil {
			t.Fatal(cerr)
		}
	}
	var te *QueryTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "query timeout of 200ms exceeded") {
		t.Fatalf("a query past the timeout: %v, want a QueryTimeoutError", err)
	}
	// A result read as it streams is cut at a fetch.
	s, _, err = e.Query(context.Background(), "SELECT range FROM range(10000000000)")
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		var rec arrow.RecordBatch
		if rec, err = s.Next(); rec != nil {
			rec.Release()
		}
	}
	s.Close()
	if !errors.As(err, &te) {
		t.Fatalf("a streaming result past the timeout: %v, want a QueryTimeoutError", err)
	}
	// The timeout bounds each statement, not the engine.
	wantRows(t, query(t, e, "SELECT count(*) FROM range(1000)"), "1000")
	// A caller's own deadline stays a plain context.DeadlineExceeded.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s, _, err = e.Query(ctx, "SELECT count(*) FROM range(1000000) a, range(10000000) b WHERE a.range + b.range > 0")
	if err == nil {
		_, err = s.Next()
		s.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
		t.Errorf("a caller's deadline: %v, want context.DeadlineExceeded and no QueryTimeoutError", err)
	}
}

// TestInterruptLeavesConnectionUsable checks the C API the timeout relies
// on: duckdb_interrupt from another goroutine stops a running statement,
// which fails with DuckDB's interrupt error, and the same connection then
// runs the next one.
func TestInterruptLeavesConnectionUsable(t *testing.T) {
	e := newTestEngine(t, newFakeResolver())
	var c bindings.Connection
	if bindings.Connect(e.db, &c) == bindings.StateError {
		t.Fatal("connect")
	}
	defer bindings.Disconnect(&c)
	done := make(chan string, 1)
	go func() {
		var res bindings.Result
		bindings.Query(c, "SELECT count(*) FROM range(1000000) a, range(10000000) b WHERE a.range + b.range > 0", &res)
		done <- bindings.ResultError(&res)
		bindings.DestroyResult(&res)
	}()
	// An interrupt that comes before the statement starts is forgotten
	// when it starts: interrupt until it returns.
	var msg string
	for waiting := true; waiting; {
		bindings.Interrupt(c)
		select {
		case msg = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !strings.Contains(msg, "INTERRUPT") {
		t.Fatalf("interrupted statement: %q, want DuckDB's interrupt error", msg)
	}
	var res bindings.Result
	defer bindings.DestroyResult(&res)
	if bindings.Query(c, "SELECT 42::BIGINT", &res) == bindings.StateError {
		t.Fatalf("the connection after an interrupt: %s", bindings.ResultError(&res))
	}
	if v := bindings.ValueInt64(&res, 0, 0); v != 42 {
		t.Fatalf("the connection after an interrupt answers %d", v)
	}
}
