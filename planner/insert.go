package planner

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/lakestream/lakestream/catalog"
)

// Insert is INSERT INTO [db.]table [(col, ...)] <source>, where the source is
// anything DuckDB evaluates to rows: VALUES (...), SELECT ..., WITH ...
type Insert struct {
	DB, Table string
	// Columns are the target columns as written; nil means all, in order.
	Columns []string
	// Source is the text after the column list.
	Source string
}

// parseInsert recognises the INSERT INTO prefix; ok is false when sql is not
// an INSERT at all. A malformed prefix is an error.
func parseInsert(sql string) (*Insert, bool, error) {
	s := &scanner{src: sql}
	if !s.keyword("insert") {
		return nil, false, nil
	}
	if !s.keyword("into") {
		return nil, true, fmt.Errorf("syntax error at position %d: expected INTO after INSERT", s.pos)
	}
	ins := &Insert{}
	name, ok := s.ident()
	if !ok {
		return nil, true, fmt.Errorf("syntax error at position %d: expected a table name", s.pos)
	}
	ins.Table = name
	if s.punct('.') {
		if ins.Table, ok = s.ident(); !ok {
			return nil, true, fmt.Errorf("syntax error at position %d: expected a table name after %q.", s.pos, name)
		}
		ins.DB = name
	}
	save := s.pos
	if s.punct('(') {
		// A parenthesis here opens either the column list or a source
		// such as (SELECT ...): a column list is identifiers and commas.
		cols, ok := s.identList()
		if ok {
			ins.Columns = cols
		} else {
			s.pos = save
		}
	}
	ins.Source = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql[s.pos:]), ";"))
	if ins.Source == "" {
		return nil, true, fmt.Errorf("syntax error at position %d: INSERT needs VALUES or a query", s.pos)
	}
	return ins, true, nil
}

// SourceQuery is the DuckDB query that produces the rows to insert, with the
// target column names and types: DuckDB casts the source to the table's
// types, as an INSERT into a DuckDB table would.
func (ins *Insert) SourceQuery(target []catalog.Column) (string, error) {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range target {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "CAST(__c%d AS %s) AS %s", i, catalog.TypeString(c.Type), catalog.QuoteIdent(c.Name))
	}
	b.WriteString(" FROM (")
	b.WriteString(ins.Source)
	b.WriteString(") AS __insert_source(")
	for i := range target {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "__c%d", i)
	}
	b.WriteString(")")
	return b.String(), nil
}

// scanner reads the few tokens of an INSERT prefix.
type scanner struct {
	src string
	pos int
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.src) {
		switch {
		case unicode.IsSpace(rune(s.src[s.pos])):
			s.pos++
		case strings.HasPrefix(s.src[s.pos:], "--"):
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		case strings.HasPrefix(s.src[s.pos:], "/*"):
			end := strings.Index(s.src[s.pos+2:], "*/")
			if end < 0 {
				s.pos = len(s.src)
				return
			}
			s.pos += end + 4
		default:
			return
		}
	}
}

func (s *scanner) keyword(kw string) bool {
	s.skipSpace()
	end := s.pos + len(kw)
	if end > len(s.src) || !strings.EqualFold(s.src[s.pos:end], kw) {
		return false
	}
	if end < len(s.src) && isIdentRune(rune(s.src[end])) {
		return false
	}
	s.pos = end
	return true
}

func (s *scanner) punct(c byte) bool {
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// ident reads an identifier, folding unquoted ones to lower case.
func (s *scanner) ident() (string, bool) {
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == '"' {
		id, ok := s.quoted('"')
		return id, ok && id != ""
	}
	start := s.pos
	for s.pos < len(s.src) && isIdentRune(rune(s.src[s.pos])) {
		s.pos++
	}
	if start == s.pos || unicode.IsDigit(rune(s.src[start])) {
		s.pos = start
		return "", false
	}
	w := s.src[start:s.pos]
	switch strings.ToLower(w) {
	case "select", "values", "with", "from", "table":
		s.pos = start
		return "", false
	}
	return strings.ToLower(w), true
}

// identList reads "a, b, c)" after an opening parenthesis.
func (s *scanner) identList() ([]string, bool) {
	var out []string
	for {
		id, ok := s.ident()
		if !ok {
			return nil, false
		}
		out = append(out, id)
		if s.punct(')') {
			return out, true
		}
		if !s.punct(',') {
			return nil, false
		}
	}
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) || r >= 0x80
}
