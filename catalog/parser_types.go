package catalog

import (
	"strconv"
	"strings"
)

// ParseType parses a type in the grammar of column definitions, e.g.
// "BIGINT", "decimal(10, 2)", "VARCHAR[]", "STRUCT(a INT, b MAP(TEXT, DOUBLE))".
//
// The type must keep to MaxTypeDepth and MaxFields; the parser stops where
// it breaks them.
func ParseType(s string) (Type, error) {
	p := newParser(s)
	t, err := p.parseType("")
	if err == nil {
		if tok := p.peek(); tok.kind != tokEOF {
			err = p.errAt(tok, "expected end of type")
		}
	}
	if p.lexErr != nil {
		return Type{}, p.lexErr
	}
	if err != nil {
		return Type{}, err
	}
	return t, nil
}

// simpleTypes maps every spelling of a parameterless type to its kind.
var simpleTypes = map[string]Kind{
	"boolean": KindBoolean, "bool": KindBoolean, "logical": KindBoolean,
	"tinyint": KindTinyInt, "int1": KindTinyInt,
	"smallint": KindSmallInt, "int2": KindSmallInt, "short": KindSmallInt,
	"integer": KindInteger, "int": KindInteger, "int4": KindInteger, "signed": KindInteger,
	"bigint": KindBigInt, "int8": KindBigInt, "long": KindBigInt,
	"float": KindFloat, "real": KindFloat, "float4": KindFloat,
	"double": KindDouble, "float8": KindDouble,
	"blob": KindBlob, "bytea": KindBlob, "binary": KindBlob, "varbinary": KindBlob,
	"date": KindDate, "time": KindTime,
	"timestamp": KindTimestamp, "timestamptz": KindTimestampTZ,
}

// lengthTypes are the string spellings that may carry an ignored length.
var lengthTypes = map[string]bool{"varchar": true, "string": true, "text": true}

// parseType parses a type for column col (used in error messages), with any
// number of [] suffixes.
func (p *parser) parseType(col string) (Type, error) {
	t, err := p.baseType(col)
	if err != nil {
		return Type{}, err
	}
	depth := -1 // of t within the whole type, once there is a suffix
	for {
		tok := p.peek()
		if !p.acceptPunct("[") {
			return t, nil
		}
		if depth < 0 {
			depth = p.nest + typeDepth(t)
		}
		if depth++; depth > MaxTypeDepth {
			return Type{}, p.errAt(tok, "%s", errTooDeep(col))
		}
		if err := p.countField(tok); err != nil {
			return Type{}, err
		}
		if err := p.expectPunct("]"); err != nil {
			return Type{}, err
		}
		t = ListOf(t)
	}
}

// enterNested counts a LIST, STRUCT or MAP type starting at tok around
// what is parsed until leaveNested, and its n child fields.
func (p *parser) enterNested(tok token, col string, n int) error {
	if p.nest++; p.nest > MaxTypeDepth {
		return p.errAt(tok, "%s", errTooDeep(col))
	}
	for range n {
		if err := p.countField(tok); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) leaveNested() { p.nest-- }

// baseType is a dispatcher on the type name.
func (p *parser) baseType(col string) (Type, error) {
	tok := p.peek()
	if tok.kind != tokIdent {
		return Type{}, p.errAt(tok, "expected a type%s", forColumn(col))
	}
	p.next()
	switch name := tok.val; {
	case name == "double":
		p.acceptKeywords("precision")
		return Prim(KindDouble), nil
	case name == "timestamp":
		return p.timestampType()
	case name == "decimal" || name == "numeric":
		return p.decimalType()
	case lengthTypes[name]:
		return Prim(KindVarchar), p.ignoredLength()
	case name == "list":
		return p.listType(tok, col)
	case name == "struct":
		return p.structType(tok, col)
	case name == "map":
		return p.mapType(tok, col)
	default:
		if k, ok := simpleTypes[name]; ok {
			return Prim(k), nil
		}
	}
	return Type{}, p.errAt(tok, "unknown type %q%s", tok.text, forColumn(col))
}

func forColumn(col string) string {
	if col == "" {
		return ""
	}
	return " for column " + strconv.Quote(col)
}

// timestampType parses what may follow TIMESTAMP: WITH[OUT] TIME ZONE.
func (p *parser) timestampType() (Type, error) {
	switch {
	case p.acceptKeywords("with"):
		return Prim(KindTimestampTZ), p.expectKeywords("time", "zone")
	case p.acceptKeywords("without"):
		return Prim(KindTimestamp), p.expectKeywords("time", "zone")
	}
	return Prim(KindTimestamp), nil
}

// decimalType parses the optional (precision[, scale]) of DECIMAL.
func (p *parser) decimalType() (Type, error) {
	if !p.acceptPunct("(") {
		return Prim(KindDecimal), nil
	}
	ptok := p.peek()
	prec, err := p.number("a precision")
	if err != nil {
		return Type{}, err
	}
	if prec < 1 || prec > MaxDecimalPrecision {
		return Type{}, p.errAt(ptok, "DECIMAL precision must be 1..%d, got %d", MaxDecimalPrecision, prec)
	}
	scale := 0
	if p.acceptPunct(",") {
		stok := p.peek()
		if scale, err = p.number("a scale"); err != nil {
			return Type{}, err
		}
		if scale > prec {
			return Type{}, p.errAt(stok, "DECIMAL scale must be 0..precision (%d), got %d", prec, scale)
		}
	}
	return Decimal(prec, scale), p.expectPunct(")")
}

// ignoredLength skips the optional (n) of VARCHAR(n): strings have no
// length limit, like DuckDB.
func (p *parser) ignoredLength() error {
	if !p.acceptPunct("(") {
		return nil
	}
	if _, err := p.number("a length"); err != nil {
		return err
	}
	return p.expectPunct(")")
}

func (p *parser) number(what string) (int, error) {
	tok := p.peek()
	if tok.kind != tokNumber {
		return 0, p.errAt(tok, "expected %s", what)
	}
	n, err := strconv.Atoi(tok.val)
	if err != nil || n > 1<<20 {
		return 0, p.errAt(tok, "%s is out of range", what)
	}
	p.next()
	return n, nil
}

func (p *parser) listType(tok token, col string) (Type, error) {
	if err := p.enterNested(tok, col, 1); err != nil {
		return Type{}, err
	}
	defer p.leaveNested()
	if err := p.expectPunct("("); err != nil {
		return Type{}, err
	}
	elem, err := p.parseType(col)
	if err != nil {
		return Type{}, err
	}
	return ListOf(elem), p.expectPunct(")")
}

func (p *parser) mapType(tok token, col string) (Type, error) {
	if err := p.enterNested(tok, col, 2); err != nil {
		return Type{}, err
	}
	defer p.leaveNested()
	if err := p.expectPunct("("); err != nil {
		return Type{}, err
	}
	ktok := p.peek()
	key, err := p.parseType(col)
	if err != nil {
		return Type{}, err
	}
	if key.IsNested() {
		return Type{}, p.errAt(ktok, "MAP key must be a primitive type, not %s", key)
	}
	if err := p.expectPunct(","); err != nil {
		return Type{}, err
	}
	val, err := p.parseType(col)
	if err != nil {
		return Type{}, err
	}
	return MapOf(key, val), p.expectPunct(")")
}

// structType parses (name TYPE, ...) after STRUCT.
func (p *parser) structType(start token, col string) (Type, error) {
	if err := p.enterNested(start, col, 0); err != nil {
		return Type{}, err
	}
	defer p.leaveNested()
	if err := p.expectPunct("("); err != nil {
		return Type{}, err
	}
	var fields []StructField
	seen := make(map[string]bool)
	for {
		tok := p.peek()
		name, err := p.ident("a STRUCT field name")
		if err != nil {
			return Type{}, err
		}
		if seen[name] {
			return Type{}, p.errAt(tok, "STRUCT field %q is defined more than once", name)
		}
		if err := p.countField(tok); err != nil {
			return Type{}, err
		}
		seen[name] = true
		t, err := p.parseType(strings.TrimPrefix(col+"."+name, "."))
		if err != nil {
			return Type{}, err
		}
		fields = append(fields, StructField{Name: name, Type: t})
		if !p.acceptPunct(",") {
			return StructOf(fields...), p.expectPunct(")")
		}
	}
}
