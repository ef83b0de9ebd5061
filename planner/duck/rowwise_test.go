package duck

import (
	"context"
	"testing"
)

// RowWiseScan accepts a projection and a filter of one table, and refuses
// every form whose rows depend on other rows: the split of a query over
// endpoints relies on it (docs/flight.md, "Split queries").
func TestRowWiseScan(t *testing.T) {
	e := newTestEngine(t, newFakeResolver())
	for _, c := range []struct {
		sql       string
		db, table string
		ok        bool
	}{
		{"SELECT * FROM t", "", "t", true},
		{"SELECT a, b + 1 AS c, upper(s) FROM db.t AS x WHERE a > ? AND s LIKE 'x%'", "db", "t", true},
		{"select id, amount * 2 from events where kind in ('a', 'b') and amount is not null", "", "events", true},
		{"SELECT CASE WHEN a > 1 THEN 'big' ELSE 'small' END, CAST(a AS VARCHAR), coalesce(b, 0) FROM t WHERE a BETWEEN 1 AND 9", "", "t", true},
		{`SELECT * FROM "t$lake" WHERE a = 1`, "", "t$lake", true},
		{"SELECT count(*) FROM t", "", "", false},
		{"SELECT sum(a) FROM t WHERE a > 1", "", "", false},
		{"SELECT a, max(b) FROM t GROUP BY a", "", "", false},
		{"SELECT DISTINCT a FROM t", "", "", false},
		{"SELECT a FROM t ORDER BY a", "", "", false},
		{"SELECT a FROM t LIMIT 10", "", "", false},
		{"SELECT a FROM t LIMIT 10 OFFSET 5", "", "", false},
		{"SELECT a, row_number() OVER () FROM t", "", "", false},
		{"SELECT a FROM t WHERE a > (SELECT avg(a) FROM t)", "", "", false},
		{"SELECT a FROM t WHERE a IN (SELECT a FROM u)", "", "", false},
		{"SELECT t.a FROM t JOIN u ON t.a = u.a", "", "", false},
		{"SELECT a FROM t UNION ALL SELECT a FROM u", "", "", false},
		{"WITH x AS (SELECT * FROM t) SELECT * FROM x", "", "", false},
		{"SELECT * FROM (SELECT * FROM t) s", "", "", false},
		{"SELECT * FROM t USING SAMPLE 10%", "", "", false},
		{"SELECT * FROM range(10)", "", "", false},
		{"SELECT 1", "", "", false},
		{"SELECT a FROM t QUALIFY a > 1", "", "", false},
		{"SELECT list(a) FROM t", "", "", false},
		{"SELECT * FROM main.t", "", "", false},
		{"SELECT 1; SELECT 2", "", "", false},
		{"EXPLAIN SELECT * FROM t", "", "", false},
	} {
		db, table, ok, err := e.RowWiseScan(context.Background(), c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if ok != c.ok || db != c.db || table != c.table {
			t.Errorf("RowWiseScan(%q) = %q, %q, %v; want %q, %q, %v", c.sql, db, table, ok, c.db, c.table, c.ok)
		}
	}
}
