package duck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
