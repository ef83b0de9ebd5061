package duck

import "github.com/lakestream/lakestream/planner"

// Statement text, read with planner's lexer: just enough to find where an
// EXPLAIN prefix ends and where a qualified table name that DuckDB's parser
// located ends. It never decides what a statement is; DuckDB's parser does
// (names.go).

// qualifiedNameAt lexes a dotted name of want parts starting at s[i] and
// returns its parts, as written, and the index after it.
func qualifiedNameAt(s string, i, want int) (parts []string, next int, ok bool) {
	lx := planner.NewLexer(s, i)
	for len(parts) < want {
		if len(parts) > 0 {
			if t := lx.Next(); t.Kind != planner.TokPunct || t.Text != "." {
				return nil, i, false
			}
		}
		t := lx.Next()
		if (t.Kind != planner.TokIdent && t.Kind != planner.TokQuoted) || (len(parts) == 0 && t.Pos != i) {
			return nil, i, false
		}
		parts = append(parts, t.Text)
		next = t.End
	}
	return parts, next, true
}

// explainPrefix returns the length of a leading "EXPLAIN [ANALYZE|ANALYSE]
// [VERBOSE] [(options)]" and whether there is one. The rest of the text is
// the explained statement.
func explainPrefix(s string) (int, bool) {
	lx := planner.NewLexer(s, 0)
	if !lx.Next().Is("EXPLAIN") {
		return 0, false
	}
	t := lx.Next()
	for _, kw := range []string{"ANALYZE", "ANALYSE", "VERBOSE"} {
		if t.Is(kw) {
			t = lx.Next()
		}
	}
	if t.Kind == planner.TokPunct && t.Text == "(" {
		for depth := 1; depth > 0 && t.Kind != planner.TokEOF; {
			t = lx.Next()
			switch {
			case t.Kind == planner.TokPunct && t.Text == "(":
				depth++
			case t.Kind == planner.TokPunct && t.Text == ")":
				depth--
			}
		}
		t = lx.Next()
	}
	return t.Pos, true
}
