package duck

import (
	"slices"
	"testing"
)

func TestExplainPrefix(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		body string // "" when there is no EXPLAIN prefix
	}{
		{"SELECT 1", ""},
		{"EXPLAIN SELECT 1", "SELECT 1"},
		{"  explain\tanalyze SELECT 1", "SELECT 1"},
		{"/* x */ EXPLAIN ANALYSE -- y\nSELECT 1", "SELECT 1"},
		{"EXPLAIN VERBOSE SELECT 1", "SELECT 1"},
		{"EXPLAIN (FORMAT json, ANALYZE) SELECT 1", "SELECT 1"},
		{"EXPLAIN (FORMAT ')') SELECT 1", "SELECT 1"},
		{"EXPLAINX SELECT 1", ""},
		{"EXPLAIN", ""},
	} {
		n, ok := explainPrefix(tc.sql)
		body := ""
		if ok {
			body = tc.sql[n:]
		}
		if body != tc.body || (tc.body != "" && !ok) {
			t.Errorf("explainPrefix(%q) = %q, %v; want body %q", tc.sql, body, ok, tc.body)
		}
	}
}

func TestQualifiedNameAt(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		parts []string
		rest  string
	}{
		{"mydb.events e", []string{"mydb", "events"}, " e"},
		{`"My ""DB"""."t"x`, []string{`My "DB"`, "t"}, "x"},
		{"a /* . */ . -- c\n b, c", []string{"a", "b"}, ", c"},
		{"été.ça)", []string{"été", "ça"}, ")"},
		{"a.", nil, ""},
		{"a b", nil, ""},
		{`"open.x`, nil, ""},
	} {
		parts, next, ok := qualifiedNameAt(tc.sql, 0, 2)
		if tc.parts == nil {
			if ok {
				t.Errorf("qualifiedNameAt(%q) = %v, want failure", tc.sql, parts)
			}
			continue
		}
		if !ok || !slices.Equal(parts, tc.parts) || tc.sql[next:] != tc.rest {
			t.Errorf("qualifiedNameAt(%q) = %q, rest %q, %v; want %q, rest %q", tc.sql, parts, tc.sql[next:], ok, tc.parts, tc.rest)
		}
	}
}

func TestRewriteRefs(t *testing.T) {
	sql := `SELECT * FROM a.t JOIN "b"."it's" AS x USING (id)`
	got, err := rewriteRefs(sql, 0, []tableRef{
		{Schema: "a", Table: "t", QueryLocation: 14},
		{Schema: "b", Table: "it's", Alias: "x", QueryLocation: 23},
	})
	want := `SELECT * FROM lakestream_scan('a', 't') AS "t" JOIN lakestream_scan('b', 'it''s') AS x USING (id)`
	if err != nil || got != want {
		t.Errorf("rewriteRefs = %q, %v\nwant %q", got, err, want)
	}
	if _, err := rewriteRefs(sql, 0, []tableRef{{Schema: "a", Table: "zz", QueryLocation: 14}}); err == nil {
		t.Error("rewriteRefs with a name not at its location: no error")
	}
}
