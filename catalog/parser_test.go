package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	bigint, varchar := Prim(KindBigInt), Prim(KindVarchar)
	tests := []struct {
		sql  string
		want Statement
	}{
		{"CREATE DATABASE sales", &CreateDatabase{Name: "sales"}},
		{"create database if not exists Sales;", &CreateDatabase{Name: "sales", IfNotExists: true}},
		{`CREATE SCHEMA "Sales"`, &CreateDatabase{Name: "Sales"}},
		{"DROP DATABASE sales", &DropDatabase{Name: "sales"}},
		{"DROP DATABASE IF EXISTS sales CASCADE;", &DropDatabase{Name: "sales", IfExists: true, Cascade: true}},
		{"DROP DATABASE sales RESTRICT", &DropDatabase{Name: "sales"}},
		{"DROP TABLE t", &DropTable{Table: TableName{Name: "t"}}},
		{"drop table if exists Db.T", &DropTable{Table: TableName{DB: "db", Name: "t"}, IfExists: true}},
		{`DROP TABLE "My""Db"."T"`, &DropTable{Table: TableName{DB: `My"Db`, Name: "T"}}},
		{"ALTER TABLE t ADD COLUMN c VARCHAR", &AddColumn{Table: TableName{Name: "t"}, Column: Column{Name: "c", Type: varchar}}},
		{"ALTER TABLE d.t ADD c BIGINT NULL;", &AddColumn{Table: TableName{DB: "d", Name: "t"}, Column: Column{Name: "c", Type: bigint}}},
		{"-- leading comment\n/* block\ncomment */ DROP /* inline */ TABLE t -- trailing",
			&DropTable{Table: TableName{Name: "t"}}},
		{"CREATE TABLE t (id BIGINT)", &CreateTable{Table: TableName{Name: "t"},
			Columns: []Column{{Name: "id", Type: bigint}}}},
		{"CREATE TABLE IF NOT EXISTS t (id BIGINT NOT NULL PRIMARY KEY, v TEXT NULL)",
			&CreateTable{Table: TableName{Name: "t"}, IfNotExists: true, PrimaryKey: []string{"id"},
				Columns: []Column{{Name: "id", Type: bigint, NotNull: true}, {Name: "v", Type: varchar}}}},
		{`CREATE TABLE t (a INT, "B" INT, PRIMARY KEY (a, "B")) PARTITIONED BY (day(ts), a) WITH ('Bucket.Num' = '4', 'x'=5, 'y' = On)`,
			&CreateTable{Table: TableName{Name: "t"},
				Columns:    []Column{{Name: "a", Type: Prim(KindInteger)}, {Name: "B", Type: Prim(KindInteger)}},
				PrimaryKey: []string{"a", "B"},
				Partition:  []PartitionField{{Column: "ts", Transform: TransformDay}, {Column: "a", Transform: TransformIdentity}},
				Options:    map[string]string{"bucket.num": "4", "x": "5", "y": "On"}}},
		// A column may be named like a keyword when it is not followed by KEY.
		{"CREATE TABLE t (primary INT, key INT)", &CreateTable{Table: TableName{Name: "t"},
			Columns: []Column{{Name: "primary", Type: Prim(KindInteger)}, {Name: "key", Type: Prim(KindInteger)}}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.sql, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q)\n got %#v\nwant %#v", tt.sql, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		sql, want string
	}{
		{"", `syntax error at position 0 at end of input: expected CREATE, DROP, ALTER, GRANT or REVOKE`},
		{"SELECT 1", `syntax error at position 0 near "SELECT": expected CREATE, DROP, ALTER, GRANT or REVOKE`},
		{"CREATE TABLE events FOO", `syntax error at position 20 near "FOO": expected "("`},
		{"CREATE VIEW v", `syntax error at position 13 at end of input: expected AS and the view's query`},
		{"CREATE INDEX i", `syntax error at position 7 near "INDEX": expected TABLE, VIEW, DATABASE, USER, ROLE or API KEY after CREATE`},
		{"CREATE OR REPLACE TABLE t (a INT)", `syntax error at position 18 near "TABLE": expected VIEW after CREATE OR REPLACE`},
		{"CREATE VIEW v AS ;", `syntax error at position 18 at end of input: expected a query after AS`},
		{"CREATE TABLE t (a INT) AS SELECT 1", `syntax error at position 23 near "AS": CREATE TABLE ... AS takes its columns from the query: the parentheses may hold only PRIMARY KEY (col, ...)`},
		{"CREATE TABLE t WITH ('bucket.num'='2')", `syntax error at position 38 at end of input: expected "(" and the columns, or AS and a query`},
		{"CREATE TABLE t (x FOO)", `syntax error at position 18 near "FOO": unknown type "FOO" for column "x"`},
		{"CREATE TABLE t (x INT,)", `syntax error at position 22 near ")": expected a column name or PRIMARY KEY`},
		{"CREATE TABLE t (x INT", `syntax error at position 21 at end of input: expected ")"`},
		{"CREATE TABLE t (x INT) extra", `syntax error at position 23 near "extra": expected end of statement`},
		{"CREATE TABLE t (a INT PRIMARY KEY, b INT PRIMARY KEY)", `multiple primary keys for table t`},
		{"CREATE TABLE t (a INT PRIMARY KEY, PRIMARY KEY (a))", `multiple primary keys for table t`},
		{"CREATE TABLE t (a INT, PRIMARY KEY ())", `expected a primary key column name`},
		{"CREATE TABLE t (a INT NOT NULL NULL)", `column "a" is both NOT NULL and NULL`},
		{"CREATE TABLE t (a DECIMAL(40,2))", `DECIMAL precision must be 1..38, got 40`},
		{"CREATE TABLE t (a DECIMAL(5,6))", `DECIMAL scale must be 0..precision (5), got 6`},
		{"CREATE TABLE t (a MAP(INT[], INT))", `MAP key must be a primitive type, not INTEGER[]`},
		{"CREATE TABLE t (a STRUCT(x INT, x INT))", `STRUCT field "x" is defined more than once`},
		{"CREATE TABLE t (a STRUCT(x BAR))", `unknown type "BAR" for column "a.x"`},
		{"CREATE TABLE t (a TIMESTAMP WITH ZONE)", `near "ZONE": expected TIME`},
		{"CREATE TABLE t (a INT) PARTITIONED BY (bucket(4, a))", `unknown partition transform "bucket": expected day, hour, month or year`},
		{"CREATE TABLE t (a INT) WITH (bucket.num = 4)", `expected an option name in single quotes`},
		{"CREATE TABLE t (a INT) WITH ('a'='1', 'A'='2')", `option "a" is given more than once`},
		{"CREATE TABLE t (a INT) WITH ('a'=)", `expected a value for option "a"`},
		{"CREATE TABLE t (a 'x')", `expected a type for column "a"`},
		{"CREATE TABLE 't' (a INT)", `expected a table name`},
		{"CREATE TABLE t (a INT) WITH ('a'='1", `unterminated string`},
		{`CREATE TABLE "t (a INT)`, `unterminated quoted identifier`},
		{`CREATE TABLE "" (a INT)`, `empty quoted identifier`},
		{"CREATE TABLE t (a INT) /* never ends", `unterminated comment`},
		{"CREATE TABLE t (a INT) # hash", `syntax error at position 23 near "#": unexpected character`},
		{"ALTER TABLE t ADD COLUMN c INT NOT NULL", `ADD COLUMN cannot be NOT NULL: existing rows have no value for column "c"; add it as nullable`},
		{"ALTER TABLE t ADD COLUMN c INT PRIMARY KEY", `ADD COLUMN cannot add a primary key column`},
		{"ALTER TABLE t DROP COLUMN c", `near "DROP": expected ADD`},
		{"DROP TABLE", `at end of input: expected a table name`},
		{"DROP TABLE a.", `expected a table name after the database name`},
		{"CREATE TABLE t (a INT); DROP TABLE t", `near "DROP": expected end of statement`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.sql)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", tt.sql, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q):\n got %q\nwant %q", tt.sql, err, tt.want)
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q): error %T is not a *SyntaxError matching ErrInvalid", tt.sql, err)
		}
	}
}

func TestSyntaxErrorPositionIsByteOffset(t *testing.T) {
	sql := "CREATE TABLE café (x FOO)" // é is two bytes
	_, err := Parse(sql)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("want *SyntaxError, got %v", err)
	}
	if got := sql[se.Pos:]; !strings.HasPrefix(got, "FOO") {
		t.Errorf("Pos %d points at %q, want FOO", se.Pos, got)
	}
}

func TestIsDDL(t *testing.T) {
	tests := map[string]bool{
		"CREATE TABLE t (a INT)":                true,
		"  drop table t":                        true,
		"-- c\n/* c */ Alter TABLE t ADD a INT": true,
		"SELECT * FROM t":                       false,
		"INSERT INTO t VALUES (1)":              false,
		"createx":                               false,
		"":                                      false,
		"/* unterminated":                       false,
		"WITH x AS (SELECT 1) SELECT * FROM x":  false,
	}
	for sql, want := range tests {
		if got := IsDDL(sql); got != want {
			t.Errorf("IsDDL(%q) = %v, want %v", sql, got, want)
		}
	}
}
