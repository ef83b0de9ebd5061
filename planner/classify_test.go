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
		{"SELECT * FROM t -- comment", KindQuery, nil},
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
