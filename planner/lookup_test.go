package planner

import (
	"reflect"
	"testing"
)

func TestParseLookup(t *testing.T) {
	p := func(n int) KeyValue { return KeyValue{Param: n} }
	num := func(s string) KeyValue { return KeyValue{Kind: TokNumber, Text: s} }
	for _, tc := range []struct {
		sql  string
		want *Lookup
	}{
		{"SELECT * FROM t WHERE id = ?", &Lookup{Table: "t", Keys: []KeyTerm{{"id", []KeyValue{p(1)}}}, Params: 1}},
		{"select v, W from db.T where ID = -5;", &Lookup{DB: "db", Table: "t", Columns: []string{"v", "w"}, Keys: []KeyTerm{{"id", []KeyValue{num("-5")}}}}},
		{"SELECT * FROM t WHERE id IN (1, ?, 3) AND region = 'eu'", &Lookup{Table: "t", Keys: []KeyTerm{
			{"id", []KeyValue{num("1"), p(1), num("3")}}, {"region", []KeyValue{{Kind: TokString, Text: "eu"}}}}, Params: 1}},
		{"SELECT * FROM t WHERE a = $2 AND b = $1", &Lookup{Table: "t", Keys: []KeyTerm{{"a", []KeyValue{p(2)}}, {"b", []KeyValue{p(1)}}}, Params: 2}},
		// Not the shape: the engine runs them.
		{"SELECT * FROM t WHERE id = ? OR id = 2", nil},
		{"SELECT * FROM t WHERE id > 1", nil},
		{"SELECT * FROM t WHERE id = 1 LIMIT 1", nil},
		{"SELECT * FROM t WHERE id = ? AND v = $1", nil},
		{"SELECT * FROM t WHERE id = 1 -- c", nil},
		{"SELECT count(*) FROM t WHERE id = 1", nil},
		{`SELECT * FROM "t$changelog" WHERE id = 1`, nil},
		{"SELECT * FROM t, u WHERE id = 1", nil},
		{"SELECT * FROM t WHERE id = 1.5e", nil},
		{"SELECT * FROM t WHERE id = 'a", nil},
	} {
		st, err := Classify(tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if st.Kind != KindQuery || !reflect.DeepEqual(st.Lookup, tc.want) {
			t.Errorf("%q: %v %+v, want %+v", tc.sql, st.Kind, st.Lookup, tc.want)
		}
	}
}
