package main

import "testing"

func TestCommandTag(t *testing.T) {
	for sql, want := range map[string]string{
		"INSERT INTO t VALUES (1), (2)":        "INSERT 2",
		"CREATE TABLE t (a INT)":               "CREATE TABLE",
		"CREATE TABLE t AS SELECT 1 AS a":      "SELECT 2",
		"drop table t":                         "DROP TABLE",
		"ALTER TABLE t ADD COLUMN b INT":       "ALTER TABLE",
		"CREATE DATABASE d":                    "CREATE DATABASE",
		"DROP DATABASE d":                      "DROP DATABASE",
		"CREATE OR REPLACE VIEW v AS SELECT 1": "CREATE VIEW",
		"DROP VIEW v":                          "DROP VIEW",
		"  delete from t where id = 1":         "DELETE 2",
		"UPDATE t SET v = 1 WHERE id = 2":      "UPDATE 2",
		"CREATE TABEL":                         "OK",
	} {
		if got := commandTag(sql, 2); got != want {
			t.Errorf("commandTag(%q) = %q, want %q", sql, got, want)
		}
	}
}
