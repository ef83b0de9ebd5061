package catalog

// createView parses the rest of CREATE [OR REPLACE] VIEW.
func (p *parser) createView(orReplace bool) (Statement, error) {
	s := &CreateView{OrReplace: orReplace, IfNotExists: p.acceptKeywords("if", "not", "exists")}
	if s.OrReplace && s.IfNotExists {
		return nil, p.errAt(p.peek(), "CREATE OR REPLACE VIEW cannot also be IF NOT EXISTS")
	}
	var err error
	if s.View, err = p.tableName(); err != nil {
		return nil, err
	}
	if !p.isKeyword("as") {
		return nil, p.errAt(p.peek(), "expected AS and the view's query")
	}
	s.Query, err = p.asQuery()
	return s, err
}

func (p *parser) dropView() (Statement, error) {
	s := &DropView{IfExists: p.acceptKeywords("if", "exists")}
	var err error
	s.View, err = p.tableName()
	return s, err
}
