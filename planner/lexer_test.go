package planner

import (
	"fmt"
	"strings"
	"testing"
)

func TestLexer(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want string // kind:text per token
	}{
		{"SELECT a, \"B\"\"c\" FROM t$lake;", `ident:SELECT ident:a punct:, quoted:B"c ident:FROM ident:t$lake punct:;`},
		{"x<=-2.5e3 AND y<>'it''s' OR z != .5", `ident:x op:<= punct:- number:2.5e3 ident:AND ident:y op:<> string:it's ident:OR ident:z op:!= number:.5`},
		{"12abc 1e 1.e5 3.", "number:12 ident:abc number:1 ident:e number:1.e5 number:3."},
		{"a -- line\n/* outer /* inner */ still */ b", "ident:a ident:b"},
		{"été€\u00a0ça\u3000_x9", "ident:été€ ident:ça ident:_x9"},
		{"$1 ?", "punct:$ number:1 punct:?"},
		{`"" 'open`, `invalid:"" invalid:'open`},
		{`"open`, `invalid:"open`},
		{"a /* never closed", "ident:a"},
	} {
		lx := NewLexer(tc.sql, 0)
		var got []string
		for tok := lx.Next(); tok.Kind != TokEOF; tok = lx.Next() {
			if tc.sql[tok.Pos:tok.End] == "" {
				t.Errorf("%q: empty token %+v", tc.sql, tok)
			}
			got = append(got, fmt.Sprintf("%s:%s", kindNames[tok.Kind], tok.Text))
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.sql, g, tc.want)
		}
	}
}

var kindNames = map[TokenKind]string{TokIdent: "ident", TokQuoted: "quoted", TokString: "string", TokNumber: "number",
	TokOp: "op", TokPunct: "punct", TokInvalid: "invalid"}

func TestLexerComments(t *testing.T) {
	for sql, want := range map[string]bool{"SELECT 1": false, "SELECT 1 -- x": true, "/**/SELECT 1": true, "SELECT '--'": false} {
		lx := NewLexer(sql, 0)
		for lx.Next().Kind != TokEOF {
		}
		if lx.Comments != want {
			t.Errorf("%q: Comments %v, want %v", sql, lx.Comments, want)
		}
	}
}
