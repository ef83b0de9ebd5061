package planner

import (
	"fmt"
	"strings"
)

// Op is a comparison in a changes() filter.
type Op string

// The comparisons a changes() filter supports.
const (
	OpEq        Op = "="
	OpNe        Op = "<>"
	OpLt        Op = "<"
	OpLe        Op = "<="
	OpGt        Op = ">"
	OpGe        Op = ">="
	OpIsNull    Op = "IS NULL"
	OpIsNotNull Op = "IS NOT NULL"
)

// flip is the comparison with its operands swapped: 1 < x is x > 1.
func (o Op) flip() Op {
	switch o {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return o
}

// LiteralKind is how a literal was written; the server converts it to the
// compared column's type.
type LiteralKind string

// The literals a changes() filter accepts.
const (
	LitNumber      LiteralKind = "number"      // 42, -2, 1.5, 1e3
	LitString      LiteralKind = "string"      // 'text'
	LitBool        LiteralKind = "bool"        // TRUE, FALSE (Text "true"/"false")
	LitTimestamp   LiteralKind = "timestamp"   // TIMESTAMP '...'
	LitTimestampTZ LiteralKind = "timestamptz" // TIMESTAMPTZ '...'
	LitDate        LiteralKind = "date"        // DATE '...'
	LitTime        LiteralKind = "time"        // TIME '...'
)

// Literal is a constant of a changes() filter, as written.
type Literal struct {
	Kind LiteralKind `json:"kind"`
	Text string      `json:"text"`
}

// Condition is one conjunct of a changes() filter: Column Op Value, or
// Column IS [NOT] NULL (Value unused). A literal on the left is flipped to
// the right when parsed. The JSON form travels in tickets.
type Condition struct {
	Column string  `json:"col"`
	Op     Op      `json:"op"`
	Value  Literal `json:"val,omitempty"`
}

func (c Condition) String() string {
	if c.Op == OpIsNull || c.Op == OpIsNotNull {
		return fmt.Sprintf("%s %s", c.Column, c.Op)
	}
	if c.Value.Kind == LitNumber || c.Value.Kind == LitBool {
		return fmt.Sprintf("%s %s %s", c.Column, c.Op, c.Value.Text)
	}
	return fmt.Sprintf("%s %s %s'%s'", c.Column, c.Op, literalPrefix[c.Value.Kind], strings.ReplaceAll(c.Value.Text, "'", "''"))
}

var literalPrefix = map[LiteralKind]string{LitTimestamp: "TIMESTAMP ", LitTimestampTZ: "TIMESTAMPTZ ", LitDate: "DATE ", LitTime: "TIME "}

// whereHelp says what a filter over an unbounded stream may be.
const whereHelp = "changes() supports WHERE conditions of the form `column op literal` joined by AND " +
	"(op one of = <> != < <= > >=; literals: numbers, 'strings', TRUE/FALSE, TIMESTAMP/TIMESTAMPTZ/DATE/TIME '...') " +
	"and `column IS [NOT] NULL`; OR, NOT, functions, arithmetic, IN, LIKE, BETWEEN and subqueries over an " +
	"unbounded stream are not supported — query the table or \"t$changelog\" for those"

// errWhere reports what the filter parser stopped at.
func (s *cursor) errWhere(what string) error {
	near := s.rest()
	if len(near) > 20 {
		near = near[:20] + "..."
	}
	if near == "" {
		return fmt.Errorf("changes(): WHERE: %s at the end of the statement; %s", what, whereHelp)
	}
	return fmt.Errorf("changes(): WHERE: %s at %q; %s", what, near, whereHelp)
}

// where reads cond [AND cond ...] after WHERE, up to the end of the
// statement.
func (s *cursor) where() ([]Condition, error) {
	var out []Condition
	for {
		c, err := s.condition()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if s.keyword("and") {
			continue
		}
		s.punct(";")
		if s.atEnd() {
			return out, nil
		}
		if s.keyword("or") {
			return nil, s.errWhere("OR is not supported")
		}
		return nil, s.errWhere("expected AND or the end of the statement")
	}
}

// condition reads col op literal, literal op col or col IS [NOT] NULL.
func (s *cursor) condition() (Condition, error) {
	if s.keyword("not") {
		return Condition{}, s.errWhere("NOT is not supported")
	}
	if s.punct("(") {
		return Condition{}, s.errWhere("parentheses are not supported")
	}
	if lit, ok, err := s.literal(); err != nil {
		return Condition{}, err
	} else if ok {
		op, ok := s.op()
		if !ok {
			return Condition{}, s.errWhere("expected a comparison after a literal")
		}
		col, err := s.filterColumn()
		if err != nil {
			return Condition{}, err
		}
		return Condition{Column: col, Op: op.flip(), Value: lit}, nil
	}
	col, err := s.filterColumn()
	if err != nil {
		return Condition{}, err
	}
	if s.keyword("is") {
		op := OpIsNull
		if s.keyword("not") {
			op = OpIsNotNull
		}
		if !s.keyword("null") {
			return Condition{}, s.errWhere("expected NULL after IS")
		}
		return Condition{Column: col, Op: op}, nil
	}
	op, ok := s.op()
	if !ok {
		return Condition{}, s.errWhere(fmt.Sprintf("expected a comparison after %s", col))
	}
	lit, ok, err := s.literal()
	if err != nil {
		return Condition{}, err
	}
	if !ok {
		return Condition{}, s.errWhere("expected a literal (comparing two columns is not supported)")
	}
	return Condition{Column: col, Op: op, Value: lit}, nil
}

// reservedInWhere are the keywords refused as unquoted column names, so
// that "WHERE NULL IS NULL" or "WHERE EXISTS (...)" get the filter message.
var reservedInWhere = map[string]bool{"null": true, "and": true, "or": true, "not": true, "exists": true,
	"case": true, "cast": true, "in": true, "like": true, "between": true, "is": true, "where": true}

// filterColumn reads a column name that is not a function call.
func (s *cursor) filterColumn() (string, error) {
	save := s.pos
	t := s.peek()
	col, ok := s.ident()
	if !ok || (t.Kind == TokIdent && reservedInWhere[col]) {
		s.pos = save
		return "", s.errWhere("expected a column name")
	}
	if s.punct("(") || s.punct(".") {
		s.pos = save
		return "", s.errWhere("functions and qualified names are not supported")
	}
	return col, nil
}

// ops are the comparison operators, as the lexer reads them.
var ops = map[string]Op{"=": OpEq, "<>": OpNe, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe}

// op reads a comparison operator.
func (s *cursor) op() (Op, bool) {
	if t := s.peek(); t.Kind == TokOp {
		s.take(t)
		return ops[t.Text], true
	}
	return "", false
}

// literal reads a constant; ok is false, with the position unchanged, when
// there is none here.
func (s *cursor) literal() (Literal, bool, error) {
	save := s.pos
	for _, typed := range []struct {
		kw   string
		kind LiteralKind
	}{{"timestamptz", LitTimestampTZ}, {"timestamp", LitTimestamp}, {"date", LitDate}, {"time", LitTime}} {
		if s.keyword(typed.kw) {
			if text, ok := s.str(); ok {
				return Literal{Kind: typed.kind, Text: text}, true, nil
			}
			s.pos = save // a column named date, say
		}
	}
	switch t := s.peek(); {
	case s.keyword("true"):
		return Literal{Kind: LitBool, Text: "true"}, true, nil
	case s.keyword("false"):
		return Literal{Kind: LitBool, Text: "false"}, true, nil
	case t.Is("null"):
		return Literal{}, false, s.errWhere("comparing with NULL is never true: use IS NULL or IS NOT NULL")
	case t.Kind == TokString:
		s.take(t)
		return Literal{Kind: LitString, Text: t.Text}, true, nil
	case t.Kind == TokInvalid && t.Text[0] == '\'':
		return Literal{}, false, s.errWhere("unterminated string")
	}
	if n, ok := s.numberLiteral(); ok {
		return Literal{Kind: LitNumber, Text: n}, true, nil
	}
	s.pos = save
	return Literal{}, false, nil
}

// numberLiteral reads a number with an optional sign written against it:
// -2, +3, 1.5e3; not one that a name follows without a space (12abc).
func (s *cursor) numberLiteral() (string, bool) {
	save := s.pos
	sign := ""
	if t := s.peek(); t.Kind == TokPunct && (t.Text == "-" || t.Text == "+") {
		s.take(t)
		sign = t.Text
	}
	n := s.peek()
	if n.Kind != TokNumber || (sign != "" && n.Pos != s.pos) {
		s.pos = save
		return "", false
	}
	s.take(n)
	if next := s.peek(); next.Pos == n.End && (next.Kind == TokIdent || next.Kind == TokNumber) {
		s.pos = save
		return "", false
	}
	return sign + n.Text, true
}
