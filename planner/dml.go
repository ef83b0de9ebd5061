package planner

import (
	"fmt"
	"strings"

	"github.com/lakestream/lakestream/catalog"
)

// DELETE and UPDATE of primary-key tables. The planner does not evaluate
// predicates or expressions itself: it turns the statement into a query
// that the engine (DuckDB) runs over the table's current state, and the
// table applies the query's rows by key. A DELETE selects the keys of the
// rows to delete; an UPDATE selects each matching row with the assigned
// columns replaced, cast to their types (SELECT * REPLACE), and the table
// sets each key's row to exactly that row. The WHERE clause and the
// expressions go to DuckDB as written, so any predicate DuckDB accepts
// works, subqueries and parameters included.

// Delete is DELETE FROM [db.]table [[AS] alias] [WHERE predicate].
type Delete struct {
	DB, Table string
	// Alias names the table in Where; "" when none was written.
	Alias string
	// Where is the predicate as written; "" deletes every row.
	Where string
}

// Update is UPDATE [db.]table [[AS] alias] SET col = expr, ... [WHERE predicate].
type Update struct {
	DB, Table string
	Alias     string
	Set       []Assignment
	// Where is the predicate as written; "" updates every row.
	Where string
}

// Assignment is one col = expr of an UPDATE's SET.
type Assignment struct {
	Column string
	Expr   string // as written
}

// parseDelete recognises DELETE; ok is false when sql is not one.
func parseDelete(sql string) (*Delete, bool, error) {
	s := &cursor{src: sql}
	if !s.keyword("delete") {
		return nil, false, nil
	}
	if !s.keyword("from") {
		return nil, true, fmt.Errorf("syntax error at position %d: expected FROM after DELETE", s.at())
	}
	d := &Delete{}
	var err error
	if d.DB, d.Table, d.Alias, err = s.dmlTarget(); err != nil {
		return nil, true, err
	}
	if d.Where, err = s.dmlWhere("DELETE"); err != nil {
		return nil, true, err
	}
	return d, true, nil
}

// parseUpdate recognises UPDATE; ok is false when sql is not one.
func parseUpdate(sql string) (*Update, bool, error) {
	s := &cursor{src: sql}
	if !s.keyword("update") {
		return nil, false, nil
	}
	u := &Update{}
	var err error
	if u.DB, u.Table, u.Alias, err = s.dmlTarget(); err != nil {
		return nil, true, err
	}
	if !s.keyword("set") {
		return nil, true, fmt.Errorf("syntax error at position %d: expected SET after the table name", s.at())
	}
	seen := map[string]bool{}
	for {
		col, ok := s.ident()
		if !ok {
			return nil, true, fmt.Errorf("syntax error at position %d: expected a column name in SET", s.at())
		}
		if t := s.peek(); t.Kind == TokOp && t.Text == "=" {
			s.take(t)
		} else {
			return nil, true, fmt.Errorf("syntax error at position %d: expected = after SET %s", s.at(), col)
		}
		if seen[strings.ToLower(col)] {
			return nil, true, fmt.Errorf("column %q assigned twice in SET", col)
		}
		seen[strings.ToLower(col)] = true
		expr, end := s.expression()
		if expr == "" {
			return nil, true, fmt.Errorf("syntax error at position %d: expected an expression for SET %s", s.at(), col)
		}
		u.Set = append(u.Set, Assignment{Column: col, Expr: expr})
		if !end {
			break
		}
	}
	if u.Where, err = s.dmlWhere("UPDATE"); err != nil {
		return nil, true, err
	}
	return u, true, nil
}

// dmlTarget reads [db.]table [[AS] alias].
func (s *cursor) dmlTarget() (db, table, alias string, err error) {
	name, ok := s.ident()
	if !ok {
		return "", "", "", fmt.Errorf("syntax error at position %d: expected a table name", s.at())
	}
	table = name
	if s.punct(".") {
		if table, ok = s.ident(); !ok {
			return "", "", "", fmt.Errorf("syntax error at position %d: expected a table name after %q.", s.at(), name)
		}
		db = name
	}
	as := s.keyword("as")
	if t := s.peek(); (t.Kind == TokIdent && !dmlKeywords[strings.ToLower(t.Text)]) || t.Kind == TokQuoted {
		alias, _ = s.ident()
	} else if as {
		return "", "", "", fmt.Errorf("syntax error at position %d: expected an alias after AS", s.at())
	}
	return db, table, alias, nil
}

// dmlKeywords follow a DML target; they are not aliases.
var dmlKeywords = map[string]bool{"where": true, "set": true, "using": true, "returning": true, "from": true}

// dmlWhere reads [WHERE predicate] [;] to the end.
func (s *cursor) dmlWhere(verb string) (string, error) {
	if s.atEnd() || s.punct(";") && s.atEnd() {
		return "", nil
	}
	if !s.keyword("where") {
		return "", fmt.Errorf("syntax error at position %d: expected WHERE or the end of the %s (%s ... USING/FROM/RETURNING are not supported)", s.at(), verb, verb)
	}
	where := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.rest()), ";"))
	if where == "" {
		return "", fmt.Errorf("syntax error at position %d: expected a predicate after WHERE", s.at())
	}
	return where, nil
}

// expression reads an expression up to a comma, WHERE (or FROM,
// RETURNING, which dmlWhere refuses) or the end at the outermost level of
// parentheses; more reports that a comma ended it.
func (s *cursor) expression() (expr string, more bool) {
	start := s.peek().Pos
	depth := 0
	for {
		t := s.peek()
		switch {
		case t.Kind == TokEOF, t.Kind == TokPunct && t.Text == ";" && depth == 0:
			return strings.TrimSpace(s.src[start:t.Pos]), false
		case depth == 0 && (t.Is("where") || t.Is("from") || t.Is("returning")):
			return strings.TrimSpace(s.src[start:t.Pos]), false
		case depth == 0 && t.Kind == TokPunct && t.Text == ",":
			expr = strings.TrimSpace(s.src[start:t.Pos])
			s.take(t)
			return expr, true
		case t.Kind == TokPunct && (t.Text == "(" || t.Text == "["):
			depth++
		case t.Kind == TokPunct && (t.Text == ")" || t.Text == "]"):
			depth--
		}
		s.take(t)
	}
}

// QuoteName quotes a name for the engine, always: a name that needs no
// quotes in the catalog's DDL may be a keyword to DuckDB ("default").
func QuoteName(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// tableRef is the FROM item of a DML source query.
func tableRef(db, table, alias string) string {
	ref := QuoteName(table)
	if db != "" {
		ref = QuoteName(db) + "." + ref
	}
	if alias != "" {
		ref += " AS " + QuoteName(alias)
	}
	return ref
}

// KeyQuery is the query that selects the keys of the rows a DELETE of def
// removes, in the key's column order.
func (d *Delete) KeyQuery(def *catalog.Table) (string, error) {
	if !def.HasPrimaryKey() {
		return "", logTableError(def, "DELETE")
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, k := range def.PrimaryKey {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteName(k))
	}
	b.WriteString(" FROM ")
	b.WriteString(tableRef(d.DB, d.Table, d.Alias))
	if d.Where != "" {
		b.WriteString(" WHERE ")
		b.WriteString(d.Where)
	}
	return b.String(), nil
}

// RowQuery is the query that selects the new rows of an UPDATE of def:
// each matching row, every column, with the assigned ones replaced by
// their expressions cast to the column's type. Assigning a key column is
// refused: a key identifies its row, so changing it is a DELETE and an
// INSERT.
func (u *Update) RowQuery(def *catalog.Table) (string, error) {
	if !def.HasPrimaryKey() {
		return "", logTableError(def, "UPDATE")
	}
	var b strings.Builder
	b.WriteString("SELECT * REPLACE (")
	for i, a := range u.Set {
		c := def.ColumnIndexFold(a.Column)
		if c < 0 {
			return "", fmt.Errorf("%w: column %q not found in table %s", ErrInvalid, a.Column, def.FullName())
		}
		col := def.Columns[c]
		for _, k := range def.PrimaryKey {
			if strings.EqualFold(k, col.Name) {
				return "", fmt.Errorf("%w: UPDATE cannot SET %s: it is a primary-key column of %s (delete the row and insert it with the new key)", ErrInvalid, col.Name, def.FullName())
			}
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "CAST((%s) AS %s) AS %s", a.Expr, catalog.TypeString(col.Type), QuoteName(col.Name))
	}
	b.WriteString(") FROM ")
	b.WriteString(tableRef(u.DB, u.Table, u.Alias))
	if u.Where != "" {
		b.WriteString(" WHERE ")
		b.WriteString(u.Where)
	}
	return b.String(), nil
}

func logTableError(def *catalog.Table, verb string) error {
	return fmt.Errorf("%w: %s is a log table (append-only, no primary key); %s needs a table with a PRIMARY KEY", ErrInvalid, def.FullName(), verb)
}

// classifyDML recognises DELETE and UPDATE.
func classifyDML(sql string) (*Statement, bool, error) {
	if d, ok, err := parseDelete(sql); ok {
		if err != nil {
			return nil, true, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return &Statement{Kind: KindDelete, SQL: sql, Delete: d}, true, nil
	}
	if u, ok, err := parseUpdate(sql); ok {
		if err != nil {
			return nil, true, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return &Statement{Kind: KindUpdate, SQL: sql, Update: u}, true, nil
	}
	return nil, false, nil
}
