package planner

import (
	"strings"

	"github.com/lakestream/lakestream/catalog"
)

// castValues rewrites an INSERT source VALUES (e, ...), ... so that each
// element is cast to its target column's type: CAST(e AS T). DuckDB then
// types a parameter in VALUES from its column (a prepared
// INSERT INTO t VALUES (?, ?) has the parameter schema of t's columns, which
// JDBC's setLong/addBatch need), and each value is cast to its column the
// way DuckDB's own INSERT does, before rows are unified. A source that is
// not a plain VALUES list, or whose rows do not have one element per target
// column, is returned as it is (ok false): DuckDB reports what is wrong.
func castValues(source string, target []catalog.Column) (string, bool) {
	l := NewLexer(source, 0)
	if !l.Next().Is("values") {
		return source, false
	}
	var b strings.Builder
	b.WriteString("VALUES ")
	for row := 0; ; row++ {
		if t := l.Next(); t.Kind != TokPunct || t.Text != "(" {
			return source, false
		}
		elems, ok := tupleElems(source, l)
		if !ok || len(elems) != len(target) {
			return source, false
		}
		if row > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i, e := range elems {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("CAST(")
			b.WriteString(e)
			b.WriteString(" AS ")
			b.WriteString(catalog.TypeString(target[i].Type))
			b.WriteByte(')')
		}
		b.WriteByte(')')
		switch t := l.Next(); {
		case t.Kind == TokEOF:
			return b.String(), true
		case t.Kind != TokPunct || t.Text != ",":
			return source, false
		}
	}
}

// tupleElems reads the elements of a parenthesised tuple whose "(" l has
// just read, up to its closing ")": the source text of each, split at the
// commas outside nested brackets.
func tupleElems(src string, l *Lexer) ([]string, bool) {
	var elems []string
	depth := 0
	start := -1
	for {
		t := l.Next()
		switch {
		case t.Kind == TokEOF || t.Kind == TokInvalid:
			return nil, false
		case t.Kind == TokPunct && (t.Text == "(" || t.Text == "[" || t.Text == "{"):
			depth++
		case t.Kind == TokPunct && (t.Text == "]" || t.Text == "}"):
			depth--
		case t.Kind == TokPunct && t.Text == ")" && depth > 0:
			depth--
		case t.Kind == TokPunct && (t.Text == ")" || t.Text == ",") && depth == 0:
			if start < 0 {
				return nil, false // an empty element
			}
			elems = append(elems, strings.TrimSpace(src[start:t.Pos]))
			start = -1
			if t.Text == ")" {
				return elems, true
			}
			continue
		}
		if start < 0 {
			start = t.Pos
		}
	}
}
