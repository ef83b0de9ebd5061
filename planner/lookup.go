package planner

import (
	"strconv"
	"strings"
)

// Lookup is the shape of a query a primary-key table answers from its key
// index, without a scan:
//
//	SELECT * | col, ... FROM [db.]table WHERE k1 = v [AND k2 IN (v, ...)] ... [;]
//
// where each v is a parameter (? or $n) or a literal (a number, a
// 'string'). Whether the query is a lookup depends on the table, which the
// planner does not know: it is one when the conditions name exactly the
// table's key columns, each once (flightsrv). Anything else, or a table
// without a key, runs in the engine as written, with the same result.
type Lookup struct {
	DB, Table string
	// Columns are the selected column names; nil means *.
	Columns []string
	// Keys are the conditions, in the order written.
	Keys []KeyTerm
	// Params is the number of parameters the conditions use.
	Params int
}

// KeyTerm is col = v or col IN (v, ...).
type KeyTerm struct {
	Column string
	Values []KeyValue
}

// KeyValue is one value of a KeyTerm: a parameter or a literal.
type KeyValue struct {
	// Param is the 1-based parameter number; 0 for a literal.
	Param int
	// Kind is TokNumber or TokString for a literal.
	Kind TokenKind
	// Text is the literal: the string's value, or the number's digits
	// with a leading "-" when negative.
	Text string
}

// parseLookup returns the lookup shape of sql, or nil. It accepts only the
// shape above, without comments: what it declines goes to the engine.
func parseLookup(sql string) *Lookup {
	lx := NewLexer(sql, 0)
	var toks []Token
	for t := lx.Next(); t.Kind != TokEOF; t = lx.Next() {
		if t.Kind == TokInvalid {
			return nil
		}
		toks = append(toks, t)
	}
	if lx.Comments || len(toks) < 8 || !toks[0].Is("select") {
		return nil
	}
	if isPunct(toks[len(toks)-1], ";") {
		toks = toks[:len(toks)-1]
	}
	p := &lookupParser{toks: toks, i: 1}
	return p.parse()
}

type lookupParser struct {
	toks []Token
	i    int
	// positional and numbered parameters cannot be mixed (as in DuckDB)
	positional, numbered bool
	params               int
}

func (p *lookupParser) peek() Token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return Token{Kind: TokEOF}
}

func (p *lookupParser) next() Token { t := p.peek(); p.i++; return t }

func (p *lookupParser) name() (string, bool) {
	t := p.next()
	if !isScanName(t) || t.Is("in") || t.Is("and") || t.Is("or") || t.Is("not") {
		return "", false
	}
	return t.Name(), true
}

func (p *lookupParser) parse() *Lookup {
	l := &Lookup{}
	if isPunct(p.peek(), "*") {
		p.i++
	} else {
		for {
			c, ok := p.name()
			if !ok {
				return nil
			}
			l.Columns = append(l.Columns, c)
			if !isPunct(p.peek(), ",") {
				break
			}
			p.i++
		}
	}
	if !p.next().Is("from") {
		return nil
	}
	name, ok := p.name()
	if !ok {
		return nil
	}
	l.Table = name
	if isPunct(p.peek(), ".") {
		p.i++
		if l.Table, ok = p.name(); !ok {
			return nil
		}
		l.DB = name
	}
	if strings.Contains(l.Table, "$") || !p.next().Is("where") {
		return nil // virtual tables ("t$changelog") have no key index
	}
	for {
		term, ok := p.term()
		if !ok {
			return nil
		}
		l.Keys = append(l.Keys, term)
		if p.peek().Kind == TokEOF {
			break
		}
		if !p.next().Is("and") {
			return nil
		}
	}
	l.Params = p.params
	return l
}

// term reads col = v or col IN (v, ...).
func (p *lookupParser) term() (KeyTerm, bool) {
	col, ok := p.name()
	if !ok {
		return KeyTerm{}, false
	}
	t := KeyTerm{Column: col}
	switch op := p.next(); {
	case op.Kind == TokOp && op.Text == "=":
		v, ok := p.value()
		if !ok {
			return KeyTerm{}, false
		}
		t.Values = []KeyValue{v}
	case op.Is("in"):
		if !isPunct(p.next(), "(") {
			return KeyTerm{}, false
		}
		for {
			v, ok := p.value()
			if !ok {
				return KeyTerm{}, false
			}
			t.Values = append(t.Values, v)
			sep := p.next()
			if isPunct(sep, ")") {
				break
			}
			if !isPunct(sep, ",") {
				return KeyTerm{}, false
			}
		}
	default:
		return KeyTerm{}, false
	}
	return t, true
}

// value reads ?, $n, a number (optionally negative) or a string.
func (p *lookupParser) value() (KeyValue, bool) {
	t := p.next()
	switch {
	case isPunct(t, "?"):
		if p.numbered {
			return KeyValue{}, false
		}
		p.positional = true
		p.params++
		return KeyValue{Param: p.params}, true
	case isPunct(t, "$"):
		n := p.next()
		if p.positional || n.Kind != TokNumber || n.Pos != t.End {
			return KeyValue{}, false
		}
		k, err := strconv.Atoi(n.Text)
		if err != nil || k < 1 {
			return KeyValue{}, false
		}
		p.numbered = true
		p.params = max(p.params, k)
		return KeyValue{Param: k}, true
	case isPunct(t, "-"):
		n := p.next()
		if n.Kind != TokNumber {
			return KeyValue{}, false
		}
		return KeyValue{Kind: TokNumber, Text: "-" + n.Text}, true
	case t.Kind == TokNumber, t.Kind == TokString:
		return KeyValue{Kind: t.Kind, Text: t.Text}, true
	}
	return KeyValue{}, false
}
