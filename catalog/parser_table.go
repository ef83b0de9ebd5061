package catalog

import "strings"

// createTable parses the rest of CREATE TABLE.
func (p *parser) createTable() (Statement, error) {
	s := &CreateTable{IfNotExists: p.acceptKeywords("if", "not", "exists")}
	var err error
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if !p.isKeyword("as") && !p.isKeyword("with") && !p.isKeyword("partitioned") {
		if err := p.tableElements(s); err != nil {
			return nil, err
		}
	}
	if p.acceptKeywords("partitioned", "by") {
		if s.Partition, err = p.partitionSpec(); err != nil {
			return nil, err
		}
	}
	if p.acceptKeywords("with") {
		if s.Options, err = p.options(); err != nil {
			return nil, err
		}
	}
	if at := p.peek(); isKeyword(at, "as") {
		if len(s.Columns) > 0 {
			return nil, p.errAt(at, "CREATE TABLE ... AS takes its columns from the query: the parentheses may hold only PRIMARY KEY (col, ...)")
		}
		if s.AsQuery, err = p.asQuery(); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.Columns == nil && s.PrimaryKey == nil {
		return nil, p.errAt(p.peek(), "expected \"(\" and the columns, or AS and a query")
	}
	return s, nil
}

// asQuery consumes AS and the rest of the statement, which it returns as
// written, without a trailing semicolon: a query for the engine, which
// this parser does not read.
func (p *parser) asQuery() (string, error) {
	as := p.next()
	rest := p.lx.src[as.pos+len(as.text):]
	p.ahead, p.lx.pos = nil, len(p.lx.src)
	q := strings.TrimSpace(rest)
	for strings.HasSuffix(q, ";") {
		q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	}
	if q == "" {
		return "", p.errAt(token{kind: tokEOF, pos: len(p.lx.src)}, "expected a query after AS")
	}
	return q, nil
}

// tableElements parses "(" column definitions and PRIMARY KEY constraints ")".
func (p *parser) tableElements(s *CreateTable) error {
	if err := p.expectPunct("("); err != nil {
		return err
	}
	for {
		if err := p.tableElement(s); err != nil {
			return err
		}
		if !p.acceptPunct(",") {
			return p.expectPunct(")")
		}
	}
}

func (p *parser) tableElement(s *CreateTable) error {
	tok := p.peek()
	if isKeyword(tok, "primary") && isKeyword(p.peekAt(1), "key") {
		p.skip(2)
		if s.PrimaryKey != nil {
			return p.errAt(tok, "multiple primary keys for table %s", s.Table)
		}
		cols, err := p.identList("a primary key column name")
		s.PrimaryKey = cols
		return err
	}
	return p.columnDef(s)
}

// columnDef parses col TYPE [NOT NULL | NULL] [PRIMARY KEY].
func (p *parser) columnDef(s *CreateTable) error {
	var col Column
	var err error
	at := p.peek()
	if col.Name, err = p.ident("a column name or PRIMARY KEY"); err != nil {
		return err
	}
	if len(s.Columns) == MaxColumns {
		return p.errAt(at, "more than %d columns: that is the limit", MaxColumns)
	}
	if err := p.countField(at); err != nil {
		return err
	}
	if col.Type, err = p.parseType(col.Name); err != nil {
		return err
	}
	for {
		tok := p.peek()
		switch {
		case p.acceptKeywords("not", "null"):
			col.NotNull = true
		case p.acceptKeywords("null"):
			if col.NotNull {
				return p.errAt(tok, "column %q is both NOT NULL and NULL", col.Name)
			}
		case p.acceptKeywords("primary", "key"):
			if s.PrimaryKey != nil {
				return p.errAt(tok, "multiple primary keys for table %s", s.Table)
			}
			s.PrimaryKey = []string{col.Name}
		default:
			s.Columns = append(s.Columns, col)
			return nil
		}
	}
}

// partitionSpec parses "(" field, ... ")" after PARTITIONED BY, where a field
// is a column or transform(column).
func (p *parser) partitionSpec() ([]PartitionField, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var fields []PartitionField
	for {
		f, err := p.partitionField()
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
		if len(fields) > maxListItems {
			return nil, p.errAt(p.peek(), "more than %d partition fields", maxListItems)
		}
		if !p.acceptPunct(",") {
			return fields, p.expectPunct(")")
		}
	}
}

func (p *parser) partitionField() (PartitionField, error) {
	tok := p.peek()
	name, err := p.ident("a partition column or transform")
	if err != nil {
		return PartitionField{}, err
	}
	if tok.kind != tokIdent || !p.acceptPunct("(") {
		return PartitionField{Column: name, Transform: TransformIdentity}, nil
	}
	tr := Transform(name)
	if !tr.valid() {
		return PartitionField{}, p.errAt(tok, "unknown partition transform %q: expected day, hour, month or year (bucketing is the 'bucket.key' option)", tok.text)
	}
	col, err := p.ident("a column name")
	if err != nil {
		return PartitionField{}, err
	}
	return PartitionField{Column: col, Transform: tr}, p.expectPunct(")")
}

// options parses "(" 'key' = 'value', ... ")" after WITH. Keys are
// lower-cased; values are kept as written (a bare number or word is accepted
// as well as a string).
func (p *parser) options() (map[string]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	opts := make(map[string]string)
	for {
		tok := p.peek()
		if tok.kind != tokString {
			return nil, p.errAt(tok, "expected an option name in single quotes")
		}
		p.next()
		key := strings.ToLower(strings.TrimSpace(tok.val))
		if len(opts) == maxOptions {
			return nil, p.errAt(tok, "more than %d options", maxOptions)
		}
		if _, dup := opts[key]; dup {
			return nil, p.errAt(tok, "option %q is given more than once", key)
		}
		if err := p.expectPunct("="); err != nil {
			return nil, err
		}
		val := p.peek()
		if val.kind != tokString && val.kind != tokNumber && val.kind != tokIdent {
			return nil, p.errAt(val, "expected a value for option %q", key)
		}
		p.next()
		opts[key] = val.val
		if val.kind == tokIdent {
			opts[key] = val.text
		}
		if !p.acceptPunct(",") {
			return opts, p.expectPunct(")")
		}
	}
}
