package catalog

import (
	"fmt"
	"strings"
)

// Parse parses one DDL statement (a trailing semicolon is allowed):
//
//	CREATE DATABASE [IF NOT EXISTS] db
//	DROP DATABASE [IF EXISTS] db [CASCADE | RESTRICT]
//	CREATE TABLE [IF NOT EXISTS] [db.]name (
//	    col TYPE [NOT NULL | NULL] [PRIMARY KEY], ...
//	    [, PRIMARY KEY (col, ...)]
//	) [PARTITIONED BY (col | day(col) | hour(col) | month(col) | year(col), ...)]
//	  [WITH ('option' = 'value', ...)]
//	DROP TABLE [IF EXISTS] [db.]name
//	ALTER TABLE [db.]name ADD [COLUMN] col TYPE
//
// SCHEMA is accepted as a synonym of DATABASE. Unquoted identifiers are
// lower-cased; "double quoted" ones keep their case. Errors are *SyntaxError.
func Parse(sql string) (Statement, error) {
	toks, err := tokenize(sql)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	stmt, err := p.statement()
	if err != nil {
		return nil, err
	}
	p.acceptPunct(";")
	if tok := p.peek(); tok.kind != tokEOF {
		return nil, p.errAt(tok, "expected end of statement")
	}
	return stmt, nil
}

// parser is a recursive-descent parser over a token slice.
type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

// peekAt returns the token n places ahead, or the EOF token.
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	tok := p.toks[p.i]
	if tok.kind != tokEOF {
		p.i++
	}
	return tok
}

func (p *parser) errAt(tok token, format string, args ...any) *SyntaxError {
	return &SyntaxError{Pos: tok.pos, Near: clip(tok.text), Msg: fmt.Sprintf(format, args...)}
}

func isKeyword(tok token, kw string) bool { return tok.kind == tokIdent && tok.val == kw }

func (p *parser) isKeyword(kw string) bool { return isKeyword(p.peek(), kw) }

// acceptKeywords consumes the keyword sequence kws if it comes next.
func (p *parser) acceptKeywords(kws ...string) bool {
	for n, kw := range kws {
		if !isKeyword(p.peekAt(n), kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

// expectKeywords consumes the keyword sequence kws or fails on the first
// one missing.
func (p *parser) expectKeywords(kws ...string) error {
	for _, kw := range kws {
		if !p.isKeyword(kw) {
			return p.errAt(p.peek(), "expected %s", strings.ToUpper(kw))
		}
		p.next()
	}
	return nil
}

func (p *parser) acceptPunct(c string) bool {
	if tok := p.peek(); tok.kind == tokPunct && tok.val == c {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectPunct(c string) error {
	if !p.acceptPunct(c) {
		return p.errAt(p.peek(), "expected %q", c)
	}
	return nil
}

// ident reads an identifier; what names it in the error ("a table name").
func (p *parser) ident(what string) (string, error) {
	tok := p.peek()
	if tok.kind != tokIdent && tok.kind != tokQuoted {
		return "", p.errAt(tok, "expected %s", what)
	}
	p.next()
	return tok.val, nil
}

// identList reads "(" ident, ... ")".
func (p *parser) identList(what string) ([]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var names []string
	for {
		name, err := p.ident(what)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
		if !p.acceptPunct(",") {
			return names, p.expectPunct(")")
		}
	}
}

func (p *parser) tableName() (TableName, error) {
	first, err := p.ident("a table name")
	if err != nil {
		return TableName{}, err
	}
	if !p.acceptPunct(".") {
		return TableName{Name: first}, nil
	}
	name, err := p.ident("a table name after the database name")
	return TableName{DB: first, Name: name}, err
}

// statement dispatches on the first keyword.
func (p *parser) statement() (Statement, error) {
	tok := p.next()
	switch {
	case isKeyword(tok, "create"):
		if p.acceptKeywords("table") {
			return p.createTable()
		}
		if p.acceptKeywords("database") || p.acceptKeywords("schema") {
			return p.createDatabase()
		}
		return nil, p.errAt(p.peek(), "expected TABLE or DATABASE after CREATE")
	case isKeyword(tok, "drop"):
		if p.acceptKeywords("table") {
			return p.dropTable()
		}
		if p.acceptKeywords("database") || p.acceptKeywords("schema") {
			return p.dropDatabase()
		}
		return nil, p.errAt(p.peek(), "expected TABLE or DATABASE after DROP")
	case isKeyword(tok, "alter"):
		if err := p.expectKeywords("table"); err != nil {
			return nil, err
		}
		return p.addColumn()
	}
	return nil, p.errAt(tok, "expected CREATE, DROP or ALTER")
}

func (p *parser) createDatabase() (Statement, error) {
	s := &CreateDatabase{IfNotExists: p.acceptKeywords("if", "not", "exists")}
	var err error
	s.Name, err = p.ident("a database name")
	return s, err
}

func (p *parser) dropDatabase() (Statement, error) {
	s := &DropDatabase{IfExists: p.acceptKeywords("if", "exists")}
	var err error
	if s.Name, err = p.ident("a database name"); err != nil {
		return nil, err
	}
	s.Cascade = p.acceptKeywords("cascade")
	if !s.Cascade {
		p.acceptKeywords("restrict")
	}
	return s, nil
}

func (p *parser) dropTable() (Statement, error) {
	s := &DropTable{IfExists: p.acceptKeywords("if", "exists")}
	var err error
	s.Table, err = p.tableName()
	return s, err
}

// addColumn parses the rest of ALTER TABLE name ADD [COLUMN] col TYPE.
func (p *parser) addColumn() (Statement, error) {
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	if err := p.expectKeywords("add"); err != nil {
		return nil, err
	}
	p.acceptKeywords("column")
	s := &AddColumn{Table: name}
	if s.Column.Name, err = p.ident("a column name"); err != nil {
		return nil, err
	}
	if s.Column.Type, err = p.parseType(s.Column.Name); err != nil {
		return nil, err
	}
	p.acceptKeywords("null")
	switch tok := p.peek(); {
	case isKeyword(tok, "not"):
		return nil, p.errAt(tok, "ADD COLUMN cannot be NOT NULL: existing rows have no value for column %q; add it as nullable", s.Column.Name)
	case isKeyword(tok, "primary"):
		return nil, p.errAt(tok, "ADD COLUMN cannot add a primary key column: the primary key is fixed at CREATE TABLE")
	}
	return s, nil
}
