package planner

import (
	"fmt"
	"strings"

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
	s := &cursor{src: sql}
	if !s.keyword("insert") {
		return nil, false, nil
	}
	if !s.keyword("into") {
		return nil, true, fmt.Errorf("syntax error at position %d: expected INTO after INSERT", s.at())
	}
	ins := &Insert{}
	name, ok := s.ident()
	if !ok {
		return nil, true, fmt.Errorf("syntax error at position %d: expected a table name", s.at())
	}
	ins.Table = name
	if s.punct(".") {
		if ins.Table, ok = s.ident(); !ok {
			return nil, true, fmt.Errorf("syntax error at position %d: expected a table name after %q.", s.at(), name)
		}
		ins.DB = name
	}
	save := s.pos
	if s.punct("(") {
		// A parenthesis here opens either the column list or a source
		// such as (SELECT ...): a column list is identifiers and commas.
		cols, ok := s.identList()
		if ok {
			ins.Columns = cols
		} else {
			s.pos = save
		}
	}
	ins.Source = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.rest()), ";"))
	if ins.Source == "" {
		return nil, true, fmt.Errorf("syntax error at position %d: INSERT needs VALUES or a query", s.at())
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
	source, _ := castValues(ins.Source, target)
	b.WriteString(source)
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

// identList reads "a, b, c)" after an opening parenthesis.
func (s *cursor) identList() ([]string, bool) {
	var out []string
	for {
		id, ok := s.ident()
		if !ok {
			return nil, false
		}
		out = append(out, id)
		if s.punct(")") {
			return out, true
		}
		if !s.punct(",") {
			return nil, false
		}
	}
}
