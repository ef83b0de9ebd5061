package planner

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lakestream/lakestream/catalog"
)

func defOf(t *testing.T, ddl string) *catalog.Table {
	t.Helper()
	st, err := catalog.Parse(ddl)
	if err != nil {
		t.Fatal(err)
	}
	def, err := st.(*catalog.CreateTable).Resolve(catalog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return def
}

func TestClassifyDelete(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want Delete
	}{
		{"DELETE FROM t", Delete{Table: "t"}},
		{"delete from Sales.Orders where id = 1;", Delete{DB: "sales", Table: "orders", Where: "id = 1"}},
		{`DELETE FROM "T" AS x WHERE x.v > (SELECT max(v) FROM u WHERE u.a = x.a)`, Delete{Table: "T", Alias: "x", Where: "x.v > (SELECT max(v) FROM u WHERE u.a = x.a)"}},
		{"DELETE FROM t WHERE id IN (?, ?)", Delete{Table: "t", Where: "id IN (?, ?)"}},
	} {
		st, err := Classify(tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if st.Kind != KindDelete || !reflect.DeepEqual(*st.Delete, tc.want) {
			t.Errorf("%q: %v %+v, want %+v", tc.sql, st.Kind, st.Delete, tc.want)
		}
	}
}

func TestClassifyUpdate(t *testing.T) {
	st, err := Classify(`UPDATE db.t SET v = v + 1, "Name" = concat(name, ',', 'x'), w = CASE WHEN a = 1 THEN 2 ELSE 3 END WHERE id = ? AND (a, b) = (1, 2);`)
	if err != nil {
		t.Fatal(err)
	}
	want := Update{DB: "db", Table: "t", Set: []Assignment{
		{"v", "v + 1"}, {"Name", "concat(name, ',', 'x')"}, {"w", "CASE WHEN a = 1 THEN 2 ELSE 3 END"},
	}, Where: "id = ? AND (a, b) = (1, 2)"}
	if st.Kind != KindUpdate || !reflect.DeepEqual(*st.Update, want) {
		t.Fatalf("%v %+v, want %+v", st.Kind, st.Update, want)
	}
	st, err = Classify("update t set v = 1")
	if err != nil || st.Update.Where != "" || len(st.Update.Set) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestClassifyDMLErrors(t *testing.T) {
	for sql, words := range map[string]string{
		"DELETE t WHERE id = 1":             "expected FROM",
		"DELETE FROM":                       "table name",
		"DELETE FROM t USING u WHERE t.a=1": "USING",
		"DELETE FROM t WHERE":               "predicate",
		"UPDATE t WHERE id = 1":             "SET",
		"UPDATE t SET = 1":                  "column name",
		"UPDATE t SET v 1":                  "expected =",
		"UPDATE t SET v = ":                 "expression",
		"UPDATE t SET v = 1, v = 2":         "twice",
		"UPDATE t SET v = 1 FROM u":         "WHERE",
	} {
		_, err := Classify(sql)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), words) {
			t.Errorf("%q: %v, want an invalid statement about %q", sql, err, words)
		}
	}
}

func TestDMLQueries(t *testing.T) {
	def := defOf(t, "CREATE TABLE db.t (id BIGINT, region VARCHAR, v DOUBLE, n INT, PRIMARY KEY (region, id))")
	st, _ := Classify("DELETE FROM db.t WHERE v > 1")
	q, err := st.Delete.KeyQuery(def)
	if want := `SELECT "region", "id" FROM "db"."t" WHERE v > 1`; err != nil || q != want {
		t.Errorf("delete: %q %v, want %q", q, err, want)
	}
	st, _ = Classify("UPDATE db.t x SET V = v * 2, n = NULL WHERE x.id = ?")
	q, err = st.Update.RowQuery(def)
	if want := `SELECT * REPLACE (CAST((v * 2) AS DOUBLE) AS "v", CAST((NULL) AS INTEGER) AS "n") FROM "db"."t" AS "x" WHERE x.id = ?`; err != nil || q != want {
		t.Errorf("update: %q %v, want %q", q, err, want)
	}
	for sql, words := range map[string]string{
		"UPDATE t SET id = 2":   "primary-key column",
		"UPDATE t SET nope = 2": `"nope" not found`,
	} {
		st, _ := Classify(sql)
		if _, err := st.Update.RowQuery(def); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), words) {
			t.Errorf("%q: %v, want %q", sql, err, words)
		}
	}
	log := defOf(t, "CREATE TABLE l (id BIGINT, v DOUBLE)")
	st, _ = Classify("DELETE FROM l")
	if _, err := st.Delete.KeyQuery(log); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "log table") {
		t.Errorf("delete of a log table: %v", err)
	}
	st, _ = Classify("UPDATE l SET v = 1")
	if _, err := st.Update.RowQuery(log); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "UPDATE needs a table with a PRIMARY KEY") {
		t.Errorf("update of a log table: %v", err)
	}
}
