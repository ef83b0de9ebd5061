package node

import "testing"

// The engine names "t$binlog": each change of t's changelog in one row,
// an update's before and after images paired, also for a qualified name.
func TestResolverBinlog(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	mustExec(t, cl,
		"CREATE DATABASE d",
		"CREATE TABLE d.kv (id BIGINT, v BIGINT, PRIMARY KEY (id))",
		"INSERT INTO d.kv VALUES (1, 10), (2, 20)",
		"UPDATE d.kv SET v = v + 1 WHERE id = 1",
		"DELETE FROM d.kv WHERE id = 2")
	for sql, want := range map[string]int64{
		`SELECT count(*)::BIGINT FROM d."kv$binlog"`:                                                  4,
		`SELECT sum(_offset)::BIGINT FROM d."KV$BINLOG" WHERE _change_type = 'update'`:                3,
		`SELECT (before.v * 100 + after.v)::BIGINT FROM d."kv$binlog" WHERE _change_type = 'update'`:  1011,
		`SELECT count(*)::BIGINT FROM d."kv$binlog" WHERE _change_type = 'delete' AND after IS NULL`:  1,
		`SELECT count(*)::BIGINT FROM d."kv$binlog" WHERE _change_type = 'insert' AND before IS NULL`: 2,
	} {
		if got := queryInt64(t, cl, sql); got != want {
			t.Errorf("%s: %d, want %d", sql, got, want)
		}
	}
	if _, err := cl.Execute(t.Context(), `SELECT * FROM "nope$binlog"`); err == nil {
		t.Error(`"nope$binlog" of a table that does not exist: no error`)
	}
}
