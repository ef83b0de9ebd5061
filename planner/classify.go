package planner

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/lakestream/lakestream/catalog"
)

// ErrInvalid is wrapped by every error about a statement the planner
// cannot accept as written.
var ErrInvalid = errors.New("invalid statement")

// Kind is what a statement is.
type Kind int

const (
	// KindQuery is a SELECT (or WITH, VALUES, ...) run by DuckDB.
	KindQuery Kind = iota
	// KindScan is a plain scan served from the stored batches.
	KindScan
	// KindDDL is CREATE / DROP / ALTER, applied to the catalog.
	KindDDL
	// KindInsert is INSERT INTO t ...: DuckDB evaluates the source, the
	// rows are written to the log.
	KindInsert
	// KindChanges is a subscription: SELECT ... FROM changes(...).
	KindChanges
)

// Statement is a classified statement.
type Statement struct {
	Kind Kind
	SQL  string
	// DDL is the parsed statement for KindDDL.
	DDL catalog.Statement
	// Scan is the table and columns for KindScan.
	Scan *PlainScan
	// Insert is the target and source for KindInsert.
	Insert *Insert
	// Changes is the subscription for KindChanges.
	Changes *Changes
}

// PlainScan is SELECT * | col, ... FROM [db.]table.
type PlainScan struct {
	DB, Table string
	// Columns are the selected column names; nil means *.
	Columns []string
}

// Classify parses enough of sql to route it.
func Classify(sql string) (*Statement, error) {
	if catalog.IsDDL(sql) {
		stmt, err := catalog.Parse(sql)
		if err != nil {
			return nil, err
		}
		return &Statement{Kind: KindDDL, SQL: sql, DDL: stmt}, nil
	}
	if ins, ok, err := parseInsert(sql); ok {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return &Statement{Kind: KindInsert, SQL: sql, Insert: ins}, nil
	}
	if c, ok, err := parseChanges(sql); ok {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return &Statement{Kind: KindChanges, SQL: sql, Changes: c}, nil
	}
	if s, ok := parsePlainScan(sql); ok {
		return &Statement{Kind: KindScan, SQL: sql, Scan: s}, nil
	}
	return &Statement{Kind: KindQuery, SQL: sql}, nil
}

// parsePlainScan recognises SELECT * | cols FROM name [;] and nothing more:
// anything else, even a harmless extra, goes to DuckDB.
func parsePlainScan(sql string) (*PlainScan, bool) {
	toks, ok := tokenize(sql)
	if !ok || len(toks) < 4 || !toks[0].is("select") {
		return nil, false
	}
	if toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	s := &PlainScan{}
	i := 1
	if toks[i].text == "*" {
		i++
	} else {
		for {
			if i >= len(toks) || !toks[i].ident {
				return nil, false
			}
			s.Columns = append(s.Columns, toks[i].name())
			i++
			if i < len(toks) && toks[i].text == "," {
				i++
				continue
			}
			break
		}
	}
	if i >= len(toks) || !toks[i].is("from") {
		return nil, false
	}
	rest := toks[i+1:]
	switch {
	case len(rest) == 1 && rest[0].ident:
		s.Table = rest[0].name()
	case len(rest) == 3 && rest[0].ident && rest[1].text == "." && rest[2].ident:
		s.DB, s.Table = rest[0].name(), rest[2].name()
	default:
		return nil, false
	}
	if i := strings.Index(s.Table, "$"); i >= 0 && !strings.EqualFold(s.Table[i:], "$lake") {
		return nil, false // other virtual tables ("t$changelog") are DuckDB's
	}
	return s, true
}

type token struct {
	text   string
	ident  bool
	quoted bool
}

var keywords = map[string]bool{"select": true, "from": true, "where": true, "distinct": true, "as": true,
	"limit": true, "order": true, "group": true, "union": true, "join": true, "all": true}

func (t token) is(kw string) bool { return !t.quoted && strings.EqualFold(t.text, kw) }

// name is the identifier as the catalog stores it: unquoted names fold to
// lower case.
func (t token) name() string {
	if t.quoted {
		return t.text
	}
	return strings.ToLower(t.text)
}

// tokenize splits sql into identifiers, quoted identifiers and single
// punctuation; ok is false on anything else (strings, numbers, comments).
func tokenize(sql string) ([]token, bool) {
	var out []token
	r := []rune(sql)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(r); j++ {
				if r[j] == '"' {
					if j+1 < len(r) && r[j+1] == '"' {
						b.WriteRune('"')
						j++
						continue
					}
					break
				}
				b.WriteRune(r[j])
			}
			if j >= len(r) || b.Len() == 0 {
				return nil, false
			}
			out = append(out, token{text: b.String(), ident: true, quoted: true})
			i = j + 1
		case c == '_' || unicode.IsLetter(c):
			j := i
			for j < len(r) && (r[j] == '_' || r[j] == '$' || unicode.IsLetter(r[j]) || unicode.IsDigit(r[j])) {
				j++
			}
			w := string(r[i:j])
			out = append(out, token{text: w, ident: !keywords[strings.ToLower(w)]})
			i = j
		case c == '*' || c == ',' || c == '.' || c == ';':
			out = append(out, token{text: string(c)})
			i++
		default:
			return nil, false
		}
	}
	return out, true
}

// Describe is for error messages.
func (k Kind) String() string {
	switch k {
	case KindQuery:
		return "query"
	case KindScan:
		return "scan"
	case KindDDL:
		return "ddl"
	case KindInsert:
		return "insert"
	case KindChanges:
		return "subscription"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}
