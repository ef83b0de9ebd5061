package planner

import (
	"reflect"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		kind Kind
		scan *PlainScan
	}{
		{"SELECT * FROM events", KindScan, &PlainScan{Table: "events"}},
		{"select * from Events;", KindScan, &PlainScan{Table: "events"}},
		{`SELECT id, "Kind" FROM sales.orders`, KindScan, &PlainScan{DB: "sales", Table: "orders", Columns: []string{"id", "Kind"}}},
		{`SELECT "a""b" FROM "My Table"`, KindScan, &PlainScan{Table: "My Table", Columns: []string{`a"b`}}},
		{"  SELECT\n\tid\nFROM t ;", KindScan, &PlainScan{Table: "t", Columns: []string{"id"}}},
		{"SELECT count(*) FROM t", KindQuery, nil},
		{"SELECT * FROM t WHERE id = 1", KindQuery, nil},
		{"SELECT DISTINCT id FROM t", KindQuery, nil},
		{"SELECT id AS x FROM t", KindQuery, nil},
		{"SELECT * FROM t, u", KindQuery, nil},
		{"SELECT * FROM t LIMIT 1", KindQuery, nil},
		{`SELECT * FROM "t$changelog"`, KindQuery, nil},
		{`SELECT * FROM "t$lake"`, KindScan, &PlainScan{Table: "t$lake"}},
		{"SELECT * FROM t -- comment", KindQuery, nil},
		{"SELECT /* c */ * FROM t", KindQuery, nil},
		{"SELECT\u00a0*\u3000FROM t", KindScan, &PlainScan{Table: "t"}},
		// Quoted names that look like punctuation are names (a quoted "*"
		// was read as SELECT *), and a name may hold any character beyond
		// ASCII, as in DuckDB.
		{`SELECT "*" FROM t`, KindScan, &PlainScan{Table: "t", Columns: []string{"*"}}},
		{`SELECT * FROM ";"`, KindScan, &PlainScan{Table: ";"}},
		{`SELECT a, "," FROM "."."."`, KindScan, &PlainScan{DB: ".", Table: ".", Columns: []string{"a", ","}}},
		{"SELECT prix€ FROM t€", KindScan, &PlainScan{Table: "t€", Columns: []string{"prix€"}}},
		{"SELECT * FROM t, u;", KindQuery, nil},
		{"SELECT * FROM 't'", KindQuery, nil},
		{"SELECT 1.5 FROM t", KindQuery, nil},
		{`SELECT "" FROM t`, KindQuery, nil},
		{"SELECT 1", KindQuery, nil},
		{"WITH x AS (SELECT 1) SELECT * FROM x", KindQuery, nil},
		{"CREATE TABLE t (a INT)", KindDDL, nil},
		{"drop table t", KindDDL, nil},
		{"ALTER TABLE t ADD COLUMN b INT", KindDDL, nil},
	} {
		st, err := Classify(tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if st.Kind != tc.kind || !reflect.DeepEqual(st.Scan, tc.scan) {
			t.Errorf("%q: kind %v scan %+v, want %v %+v", tc.sql, st.Kind, st.Scan, tc.kind, tc.scan)
		}
		if tc.kind == KindDDL && st.DDL == nil {
			t.Errorf("%q: no parsed DDL", tc.sql)
		}
	}
}

func TestClassifyBadDDL(t *testing.T) {
	if _, err := Classify("CREATE TABLE ("); err == nil {
		t.Fatal("bad DDL classified without error")
	}
}

func TestParseInsert(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want *Insert
	}{
		{"INSERT INTO t VALUES (1, 'a')", &Insert{Table: "t", Source: "VALUES (1, 'a')"}},
		{"insert into Sales.\"Orders\" (id, \"Note\") values (1, 'x');", &Insert{DB: "sales", Table: "Orders", Columns: []string{"id", "Note"}, Source: "values (1, 'x')"}},
		{"INSERT INTO t (SELECT * FROM u)", &Insert{Table: "t", Source: "(SELECT * FROM u)"}},
		{"INSERT INTO t SELECT id FROM u WHERE id > ?", &Insert{Table: "t", Source: "SELECT id FROM u WHERE id > ?"}},
		{"INSERT /* c */ INTO t -- x\n WITH x AS (SELECT 1) SELECT * FROM x", &Insert{Table: "t", Source: "WITH x AS (SELECT 1) SELECT * FROM x"}},
		// Block comments nest, as in DuckDB (the end of the inner one
		// used to end the comment).
		{"INSERT /* a /* b */ c */ INTO t VALUES (1)", &Insert{Table: "t", Source: "VALUES (1)"}},
		{"INSERT INTO t€ (é) VALUES (1)", &Insert{Table: "t€", Columns: []string{"é"}, Source: "VALUES (1)"}},
	} {
		st, err := Classify(tc.sql)
		if err != nil || st.Kind != KindInsert || !reflect.DeepEqual(st.Insert, tc.want) {
			t.Errorf("%q: %+v %v, want %+v", tc.sql, st, err, tc.want)
		}
	}
	for _, bad := range []string{"INSERT t VALUES (1)", "INSERT INTO VALUES (1)", "INSERT INTO t", "INSERT INTO t (a, b)"} {
		if _, err := Classify(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
