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
//	CREATE TABLE [IF NOT EXISTS] [db.]name [(PRIMARY KEY (col, ...))]
//	  [PARTITIONED BY (...)] [WITH (...)] AS query
//	CREATE [OR REPLACE] VIEW [IF NOT EXISTS] [db.]name AS query
//	DROP VIEW [IF EXISTS] [db.]name
//	CREATE USER [IF NOT EXISTS] name WITH PASSWORD 'secret'
//	ALTER USER name [WITH] PASSWORD 'secret'
//	DROP USER [IF EXISTS] name
//	CREATE ROLE [IF NOT EXISTS] name
//	DROP ROLE [IF EXISTS] name
//	CREATE API KEY name [FOR [USER] user] [VALID UNTIL 'timestamp']
//	DROP API KEY [IF EXISTS] name
//	GRANT role, ... TO user_or_role, ...
//	REVOKE role, ... FROM user_or_role, ...
//	GRANT {priv, ... | ALL [PRIVILEGES]} ON {[TABLE] [db.]t, ... |
//	  DATABASE db | ALL TABLES IN DATABASE db} TO user_or_role, ...
//	REVOKE ... FROM user_or_role, ...
//	  (priv: SELECT, INSERT, UPDATE, DELETE, ALTER, DROP, CREATE)
//
// The query of CREATE TABLE ... AS and CREATE VIEW is kept as written: it
// is the query engine's to parse.
//
// SCHEMA is accepted as a synonym of DATABASE. Unquoted identifiers are
// lower-cased; "double quoted" ones keep their case. Errors are *SyntaxError.
func Parse(sql string) (Statement, error) {
	p := newParser(sql)
	stmt, err := p.statement()
	if err == nil {
		p.acceptPunct(";")
		if tok := p.peek(); tok.kind != tokEOF {
			err = p.errAt(tok, "expected end of statement")
		}
	}
	if p.lexErr != nil {
		return nil, p.lexErr // the text is malformed there: what followed is not a token
	}
	if err != nil {
		return nil, err
	}
	return stmt, nil
}

// parser is a recursive-descent parser that reads tokens from its lexer as
// it goes, so that it stops at the first error, or at a limit, having
// allocated no more than what it read: a statement that nests types
// 10,000 deep costs no more than one at the limit (limits.go).
type parser struct {
	lx *lexer
	// ahead are the tokens read and not consumed yet; ahead[0] is the next.
	ahead []token
	// lexErr is the lexer's error; the parser sees the end of input there.
	lexErr error
	// nest is the number of LIST, STRUCT and MAP types around the type
	// being parsed; fields counts the fields parsed so far (MaxFields).
	nest, fields int
}

func newParser(src string) *parser { return &parser{lx: &lexer{src: src}} }

func (p *parser) peek() token { return p.peekAt(0) }

// peekAt returns the token n places ahead, or the EOF token.
func (p *parser) peekAt(n int) token {
	for len(p.ahead) <= n {
		if k := len(p.ahead); k > 0 && p.ahead[k-1].kind == tokEOF {
			return p.ahead[k-1]
		}
		tok, err := p.lx.next()
		if err != nil {
			p.lexErr = err
			p.lx.pos = len(p.lx.src)
			tok = token{kind: tokEOF, pos: p.lx.pos}
		}
		p.ahead = append(p.ahead, tok)
	}
	return p.ahead[n]
}

func (p *parser) next() token {
	tok := p.peek()
	if tok.kind != tokEOF {
		copy(p.ahead, p.ahead[1:])
		p.ahead = p.ahead[:len(p.ahead)-1]
	}
	return tok
}

// skip consumes n tokens.
func (p *parser) skip(n int) {
	for range n {
		p.next()
	}
}

// countField counts one more field of the statement against MaxFields.
func (p *parser) countField(at token) error {
	p.fields++
	if p.fields > MaxFields {
		return p.errAt(at, "more than %d fields (columns and their nested fields): that is the limit", MaxFields)
	}
	return nil
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
	p.skip(len(kws))
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
		if len(names) > maxListItems {
			return nil, p.errAt(p.peek(), "more than %d names in a list", maxListItems)
		}
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
		orReplace := p.acceptKeywords("or", "replace")
		if p.acceptKeywords("view") {
			return p.createView(orReplace)
		}
		if orReplace {
			return nil, p.errAt(p.peek(), "expected VIEW after CREATE OR REPLACE")
		}
		if p.acceptKeywords("table") {
			return p.createTable()
		}
		if p.acceptKeywords("database") || p.acceptKeywords("schema") {
			return p.createDatabase()
		}
		if p.acceptKeywords("user") {
			return p.createUser() // users.go
		}
		if p.acceptKeywords("role") {
			return p.createRole() // grants_parse.go
		}
		if p.acceptKeywords("api", "key") {
			return p.createAPIKey() // apikeys.go
		}
		return nil, p.errAt(p.peek(), "expected TABLE, VIEW, DATABASE, USER, ROLE or API KEY after CREATE")
	case isKeyword(tok, "drop"):
		if p.acceptKeywords("table") {
			return p.dropTable()
		}
		if p.acceptKeywords("view") {
			return p.dropView()
		}
		if p.acceptKeywords("database") || p.acceptKeywords("schema") {
			return p.dropDatabase()
		}
		if p.acceptKeywords("user") {
			return p.dropUser()
		}
		if p.acceptKeywords("role") {
			return p.dropRole()
		}
		if p.acceptKeywords("api", "key") {
			return p.dropAPIKey() // apikeys.go
		}
		return nil, p.errAt(p.peek(), "expected TABLE, VIEW, DATABASE, USER, ROLE or API KEY after DROP")
	case isKeyword(tok, "alter"):
		if p.acceptKeywords("user") {
			return p.alterUser()
		}
		if err := p.expectKeywords("table"); err != nil {
			return nil, err
		}
		return p.addColumn()
	case isKeyword(tok, "grant"):
		return p.grant(false)
	case isKeyword(tok, "revoke"):
		return p.grant(true)
	}
	return nil, p.errAt(tok, "expected CREATE, DROP, ALTER, GRANT or REVOKE")
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
	at := p.peek()
	if s.Column.Name, err = p.ident("a column name"); err != nil {
		return nil, err
	}
	if err := p.countField(at); err != nil {
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
