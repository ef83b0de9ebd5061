package planner

import (
	"fmt"
	"strings"
)

// ShowKind is what a SHOW or DESCRIBE statement asks for.
type ShowKind int

const (
	// ShowDatabases is SHOW DATABASES (or SCHEMAS).
	ShowDatabases ShowKind = iota
	// ShowTables is SHOW TABLES [FROM | IN db]: tables and views.
	ShowTables
	// ShowDescribe is DESCRIBE [TABLE] name, DESC name or SHOW name: the
	// columns of a table or view.
	ShowDescribe
	// ShowDescribeQuery is DESCRIBE <query>: the columns of its result.
	ShowDescribeQuery
	// ShowCreateTable is SHOW CREATE TABLE name.
	ShowCreateTable
	// ShowCreateView is SHOW CREATE VIEW name.
	ShowCreateView
	// ShowGrants is SHOW GRANTS [FOR name]: Name is the user or role, ""
	// for the caller.
	ShowGrants
	// ShowAPIKeys is SHOW API KEYS: the caller's API keys, every key for
	// a superuser.
	ShowAPIKeys
)

// Show is a SHOW or DESCRIBE statement, answered from the catalog (and,
// for views and queries, the engine's description of their result).
type Show struct {
	What ShowKind
	// DB is the database of SHOW TABLES FROM db, or of the named object.
	DB string
	// Name is the table or view of DESCRIBE and SHOW CREATE.
	Name string
	// Query is the query of DESCRIBE <query>.
	Query string
}

// parseShow recognises SHOW and DESCRIBE; ok is false for anything else.
func parseShow(sql string) (*Show, bool, error) {
	s := &cursor{src: sql}
	switch {
	case s.keyword("describe"), s.keyword("desc"):
		if t := s.peek(); t.Is("select") || t.Is("with") || t.Is("values") || t.Is("from") || (t.Kind == TokPunct && t.Text == "(") {
			q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.rest()), ";"))
			return &Show{What: ShowDescribeQuery, Query: q}, true, nil
		}
		s.keyword("table")
		return s.showObject(&Show{What: ShowDescribe}, "DESCRIBE")
	case s.keyword("show"):
	default:
		return nil, false, nil
	}
	switch {
	case s.keyword("databases"), s.keyword("schemas"):
		return s.showEnd(&Show{What: ShowDatabases})
	case s.keyword("grants"):
		sh := &Show{What: ShowGrants}
		if s.keyword("for") {
			name, ok := s.anyIdent()
			if !ok {
				return nil, true, fmt.Errorf("syntax error at position %d: expected a user or role name after SHOW GRANTS FOR", s.at())
			}
			sh.Name = name
		}
		return s.showEnd(sh)
	case s.keyword("api"):
		if !s.keyword("keys") {
			return nil, true, fmt.Errorf("syntax error at position %d: expected KEYS after SHOW API", s.at())
		}
		return s.showEnd(&Show{What: ShowAPIKeys})
	case s.keyword("tables"):
		sh := &Show{What: ShowTables}
		if s.keyword("from") || s.keyword("in") {
			db, ok := s.ident()
			if !ok {
				return nil, true, fmt.Errorf("syntax error at position %d: expected a database name after SHOW TABLES FROM", s.at())
			}
			sh.DB = db
		}
		return s.showEnd(sh)
	case s.keyword("create"):
		switch {
		case s.keyword("table"):
			return s.showObject(&Show{What: ShowCreateTable}, "SHOW CREATE TABLE")
		case s.keyword("view"):
			return s.showObject(&Show{What: ShowCreateView}, "SHOW CREATE VIEW")
		}
		return nil, true, fmt.Errorf("syntax error at position %d: expected TABLE or VIEW after SHOW CREATE", s.at())
	case s.keyword("columns"):
		if !s.keyword("from") && !s.keyword("in") {
			return nil, true, fmt.Errorf("syntax error at position %d: expected FROM after SHOW COLUMNS", s.at())
		}
		return s.showObject(&Show{What: ShowDescribe}, "SHOW COLUMNS FROM")
	}
	if t := s.peek(); t.Kind == TokIdent || t.Kind == TokQuoted {
		return s.showObject(&Show{What: ShowDescribe}, "SHOW") // DuckDB's SHOW t is DESCRIBE t
	}
	return nil, true, fmt.Errorf("syntax error at position %d: expected DATABASES, TABLES, GRANTS, CREATE TABLE, CREATE VIEW or a table name after SHOW", s.at())
}

// showObject reads the [db.]name a SHOW or DESCRIBE names.
func (s *cursor) showObject(sh *Show, what string) (*Show, bool, error) {
	name, ok := s.anyIdent()
	if !ok {
		return nil, true, fmt.Errorf("syntax error at position %d: expected a table or view name after %s", s.at(), what)
	}
	sh.Name = name
	if s.punct(".") {
		if sh.Name, ok = s.anyIdent(); !ok {
			return nil, true, fmt.Errorf("syntax error at position %d: expected a name after %q.", s.at(), name)
		}
		sh.DB = name
	}
	return s.showEnd(sh)
}

// anyIdent reads a name, keywords included (DESCRIBE default.values).
func (s *cursor) anyIdent() (string, bool) {
	t := s.peek()
	if t.Kind != TokIdent && t.Kind != TokQuoted {
		return "", false
	}
	s.take(t)
	return t.Name(), true
}

func (s *cursor) showEnd(sh *Show) (*Show, bool, error) {
	s.punct(";")
	if !s.atEnd() {
		return nil, true, fmt.Errorf("syntax error at position %d: unexpected %q", s.at(), s.peek().Text)
	}
	return sh, true, nil
}
