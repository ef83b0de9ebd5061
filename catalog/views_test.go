package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestParseViewsAndCreateTableAs(t *testing.T) {
	tests := []struct {
		sql  string
		want Statement
	}{
		{"CREATE VIEW v AS SELECT 1", &CreateView{View: TableName{Name: "v"}, Query: "SELECT 1"}},
		{"create or replace view sales.V as\n  select * from t; ", &CreateView{View: TableName{DB: "sales", Name: "v"}, OrReplace: true, Query: "select * from t"}},
		{"CREATE VIEW IF NOT EXISTS \"Big\" AS WITH x AS (SELECT 1) SELECT * FROM x -- note", &CreateView{View: TableName{Name: "Big"}, IfNotExists: true, Query: "WITH x AS (SELECT 1) SELECT * FROM x -- note"}},
		{"DROP VIEW IF EXISTS db.v", &DropView{View: TableName{DB: "db", Name: "v"}, IfExists: true}},
		{"CREATE TABLE t AS SELECT 1 AS a", &CreateTable{Table: TableName{Name: "t"}, AsQuery: "SELECT 1 AS a"}},
		{"CREATE TABLE IF NOT EXISTS t (PRIMARY KEY (id)) PARTITIONED BY (day(ts)) WITH ('bucket.num' = '4') AS SELECT id, ts FROM e;",
			&CreateTable{Table: TableName{Name: "t"}, IfNotExists: true, PrimaryKey: []string{"id"},
				Partition: []PartitionField{{Column: "ts", Transform: TransformDay}}, Options: map[string]string{"bucket.num": "4"}, AsQuery: "SELECT id, ts FROM e"}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.sql, err)
			continue
		}
		if g, w := describeStatement(got), describeStatement(tt.want); g != w {
			t.Errorf("Parse(%q)\n got %s\nwant %s", tt.sql, g, w)
		}
	}
}

func TestViewStore(t *testing.T) { forEachBackend(t, testViewStore) }

func testViewStore(t *testing.T, b backend) {
	c, path := b.newCatalog(t)
	ctx := context.Background()
	exec(t, c, "CREATE TABLE t (a INT)")
	res := exec(t, c, "CREATE VIEW v AS SELECT a FROM t")
	if res.View == nil || res.View.FullName() != "default.v" || res.View.Query != "SELECT a FROM t" {
		t.Fatalf("CREATE VIEW result %+v", res.View)
	}
	for sql, want := range map[string]string{
		"CREATE VIEW v AS SELECT 2":      `view "default.v" already exists`,
		"CREATE VIEW T AS SELECT 2":      `"default.t" is a table: a view cannot take a table's name`,
		"CREATE TABLE V (a INT)":         `"default.v" is a view: a table cannot take a view's name`,
		"DROP TABLE v":                   `"default.v" is a view, not a table: drop it with DROP VIEW`,
		"DROP VIEW t":                    `"default.t" is a table, not a view: drop it with DROP TABLE`,
		"DROP VIEW nosuch":               `view "default.nosuch" does not exist`,
		"CREATE VIEW nodb.v AS SELECT 1": `database "nodb" does not exist`,
	} {
		if err := execErr(t, c, sql); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", sql, err, want)
		}
	}
	if res := exec(t, c, "CREATE VIEW IF NOT EXISTS v AS SELECT 3"); !res.NoOp || res.View.Query != "SELECT a FROM t" {
		t.Errorf("IF NOT EXISTS on an existing view: %+v", res)
	}
	exec(t, c, "CREATE OR REPLACE VIEW V AS SELECT a + 1 AS b FROM t")
	exec(t, c, "CREATE DATABASE s")
	exec(t, c, "CREATE VIEW s.w AS SELECT 1")
	if err := execErr(t, c, "DROP DATABASE s"); !errors.Is(err, ErrDatabaseNotEmpty) {
		t.Errorf("DROP DATABASE with a view: %v, want ErrDatabaseNotEmpty", err)
	}

	// Views survive a restart.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = b.open(t, path)
	defer c.Close()
	v, err := c.View(ctx, "", "V")
	if err != nil || v.Query != "SELECT a + 1 AS b FROM t" || v.UpdatedAt.Before(v.CreatedAt) {
		t.Fatalf("view after reopen: %+v, %v", v, err)
	}
	if v.DDL() != "CREATE VIEW default.v AS\nSELECT a + 1 AS b FROM t" {
		t.Errorf("DDL %q", v.DDL())
	}
	all, err := c.Views(ctx, "")
	if err != nil || len(all) != 2 || all[0].FullName() != "default.v" || all[1].FullName() != "s.w" {
		t.Errorf("Views: %v, %v", all, err)
	}
	if _, err := c.Exec(ctx, &DropDatabase{Name: "s", Cascade: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.View(ctx, "s", "w"); !errors.Is(err, ErrViewNotFound) {
		t.Errorf("view of a dropped database: %v", err)
	}
	if res, err := c.Exec(ctx, &DropView{View: TableName{Name: "v"}}); err != nil || res.View == nil {
		t.Fatalf("DROP VIEW: %+v, %v", res, err)
	}
	if res, err := c.Exec(ctx, &DropView{View: TableName{Name: "v"}, IfExists: true}); err != nil || !res.NoOp {
		t.Errorf("DROP VIEW IF EXISTS of a dropped view: %+v, %v", res, err)
	}
}

// describeStatement renders a parsed statement for comparison.
func describeStatement(s Statement) string {
	return fmt.Sprintf("%T %+v", s, s)
}
