package planner

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseChangesWhere(t *testing.T) {
	num := func(s string) Literal { return Literal{Kind: LitNumber, Text: s} }
	strl := func(s string) Literal { return Literal{Kind: LitString, Text: s} }
	for _, tc := range []struct {
		sql  string
		cols []string
		want []Condition
	}{
		{"SELECT id FROM changes('t', 'latest')", []string{"id"}, nil},
		{"SELECT id FROM changes('t', 'latest') WHERE id > 5", []string{"id"}, []Condition{{"id", OpGt, num("5")}}},
		{"select id from changes('t','earliest') where Kind = 'buy' and amount >= 10.5;", []string{"id"},
			[]Condition{{"kind", OpEq, strl("buy")}, {"amount", OpGe, num("10.5")}}},
		{"SELECT * FROM changes('t', 'latest') WHERE 5 < id AND -2 >= x AND 1e3 <> y AND 'a' = s", nil,
			[]Condition{{"id", OpGt, num("5")}, {"x", OpLe, num("-2")}, {"y", OpNe, num("1e3")}, {"s", OpEq, strl("a")}}},
		{"SELECT * FROM changes('t', 'latest') WHERE a != 1 AND b<=.5 AND c>+3", nil,
			[]Condition{{"a", OpNe, num("1")}, {"b", OpLe, num(".5")}, {"c", OpGt, num("+3")}}},
		{"SELECT * FROM changes('t', 'latest') WHERE _bucket = 1 AND _offset >= 100", nil,
			[]Condition{{"_bucket", OpEq, num("1")}, {"_offset", OpGe, num("100")}}},
		{"SELECT * FROM changes('t', 'latest') WHERE kind IS NULL AND amount is not null", nil,
			[]Condition{{"kind", OpIsNull, Literal{}}, {"amount", OpIsNotNull, Literal{}}}},
		{"SELECT * FROM changes('t', 'latest') WHERE ok = TRUE AND false <> done", nil,
			[]Condition{{"ok", OpEq, Literal{LitBool, "true"}}, {"done", OpNe, Literal{LitBool, "false"}}}},
		{"SELECT * FROM changes('t', 'latest') WHERE ts >= TIMESTAMP '2026-01-01 10:00:00' AND d < DATE '2026-01-02' " +
			"AND tm > TIME '10:00' AND TIMESTAMPTZ '2026-01-01' < ts", nil,
			[]Condition{{"ts", OpGe, Literal{LitTimestamp, "2026-01-01 10:00:00"}}, {"d", OpLt, Literal{LitDate, "2026-01-02"}},
				{"tm", OpGt, Literal{LitTime, "10:00"}}, {"ts", OpGt, Literal{LitTimestampTZ, "2026-01-01"}}}},
		{"SELECT * FROM changes('t', 'latest') /* a /* b */ */ WHERE a>-1 AND b<-.5e1 -- end", nil,
			[]Condition{{"a", OpGt, num("-1")}, {"b", OpLt, num("-.5e1")}}},
		{`SELECT * FROM changes('t', 'latest') WHERE "My Col" = 'it''s' AND date = '2026-01-01'`, nil,
			[]Condition{{"My Col", OpEq, strl("it's")}, {"date", OpEq, strl("2026-01-01")}}},
	} {
		st, err := Classify(tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if st.Kind != KindChanges || !reflect.DeepEqual(st.Changes.Columns, tc.cols) || !reflect.DeepEqual(st.Changes.Where, tc.want) {
			t.Errorf("%q:\n got %v %+v\nwant %+v", tc.sql, st.Kind, st.Changes, tc.want)
		}
	}
}

func TestParseChangesWhereRefused(t *testing.T) {
	for sql, words := range map[string]string{
		"WHERE a = 1 OR b = 2":           "OR is not supported",
		"WHERE a = 1 ORDER BY a":         "expected AND or the end",
		"WHERE NOT a = 1":                "NOT is not supported",
		"WHERE (a = 1)":                  "parentheses",
		"WHERE abs(a) > 1":               "functions",
		"WHERE a + 1 > 2":                "expected a comparison after a",
		"WHERE a > 1 + 2":                "expected AND",
		"WHERE a % 2 = 0":                "expected a comparison after a",
		"WHERE a IN (1, 2)":              "expected a comparison after a",
		"WHERE a LIKE 'x%'":              "expected a comparison after a",
		"WHERE a BETWEEN 1 AND 2":        "expected a comparison after a",
		"WHERE a = b":                    "comparing two columns",
		"WHERE 1 = 1":                    "expected a column name",
		"WHERE a = NULL":                 "use IS NULL",
		"WHERE a IS 1":                   "expected NULL after IS",
		"WHERE a = (SELECT 1)":           "expected a literal",
		"WHERE EXISTS (SELECT 1)":        "expected a column name",
		"WHERE a = 'open":                "unterminated",
		"WHERE a = 12abc":                "expected a literal",
		"WHERE a = - 1":                  "expected a literal",
		"WHERE a = 1e":                   "expected a literal",
		`WHERE "" = 1`:                   "expected a column name",
		"WHERE":                          "expected a column name",
		"WHERE a = 1 AND":                "expected a column name",
		"WHERE t.a = 1":                  "qualified",
		"WHERE a = 1 GROUP BY a":         "expected AND",
		"WHERE a = 1; SELECT 1":          "expected AND",
		"WHERE a = TIMESTAMP":            "expected a literal",
		"WHERE a = 1 AND b = 2 OR c = 3": "OR is not supported",
	} {
		sql = "SELECT id FROM changes('t', 'latest') " + sql
		_, err := Classify(sql)
		if err == nil {
			t.Errorf("%q: accepted", sql)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), words) || !strings.Contains(err.Error(), "supports WHERE conditions") {
			t.Errorf("%q: %v, want ErrInvalid mentioning %q and what is supported", sql, err, words)
		}
	}
	// Other clauses after changes() keep the unbounded-stream message.
	for _, sql := range []string{"SELECT * FROM changes('t', 'latest') ORDER BY id", "SELECT * FROM changes('t', 'latest') LIMIT 5"} {
		if _, err := Classify(sql); err == nil || !strings.Contains(err.Error(), "unbounded stream") {
			t.Errorf("%q: %v", sql, err)
		}
	}
}

func TestConditionString(t *testing.T) {
	for c, want := range map[Condition]string{
		{"a", OpGe, Literal{LitNumber, "1.5"}}:             "a >= 1.5",
		{"a", OpEq, Literal{LitString, "it's"}}:            "a = 'it''s'",
		{"a", OpLt, Literal{LitDate, "2026-01-01"}}:        "a < DATE '2026-01-01'",
		{"a", OpIsNotNull, Literal{}}:                      "a IS NOT NULL",
		{"a", OpNe, Literal{LitBool, "true"}}:              "a <> true",
		{"a", OpGt, Literal{LitTimestamp, "2026-01-01"}}:   "a > TIMESTAMP '2026-01-01'",
		{"a", OpGt, Literal{LitTimestampTZ, "2026-01-01"}}: "a > TIMESTAMPTZ '2026-01-01'",
	} {
		if got := c.String(); got != want {
			t.Errorf("%+v: %q, want %q", c, got, want)
		}
	}
}
