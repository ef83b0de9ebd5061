package planner

import (
	"errors"
	"fmt"
	"strings"

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
	// KindDelete is DELETE FROM t WHERE ... of a primary-key table (dml.go).
	KindDelete
	// KindUpdate is UPDATE t SET ... WHERE ... of a primary-key table.
	KindUpdate
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
	// Delete and Update are the statements of KindDelete and KindUpdate.
	Delete *Delete
	Update *Update
	// Lookup is set on a KindQuery whose shape a key lookup can answer
	// (lookup.go); whether it is one depends on the table's key.
	Lookup *Lookup
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
	if st, ok, err := classifyDML(sql); ok {
		return st, err
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
	return &Statement{Kind: KindQuery, SQL: sql, Lookup: parseLookup(sql)}, nil
}

// parsePlainScan recognises SELECT * | cols FROM name [;] and nothing more:
// anything else, even a harmless extra or a comment, goes to DuckDB.
func parsePlainScan(sql string) (*PlainScan, bool) {
	toks, ok := scanTokens(sql)
	if !ok || len(toks) < 4 || !toks[0].Is("select") {
		return nil, false
	}
	if isPunct(toks[len(toks)-1], ";") {
		toks = toks[:len(toks)-1]
	}
	s := &PlainScan{}
	i := 1
	if isPunct(toks[i], "*") {
		i++
	} else {
		for {
			if i >= len(toks) || !isScanName(toks[i]) {
				return nil, false
			}
			s.Columns = append(s.Columns, toks[i].Name())
			i++
			if i < len(toks) && isPunct(toks[i], ",") {
				i++
				continue
			}
			break
		}
	}
	if i >= len(toks) || !toks[i].Is("from") {
		return nil, false
	}
	rest := toks[i+1:]
	switch {
	case len(rest) == 1 && isScanName(rest[0]):
		s.Table = rest[0].Name()
	case len(rest) == 3 && isScanName(rest[0]) && isPunct(rest[1], ".") && isScanName(rest[2]):
		s.DB, s.Table = rest[0].Name(), rest[2].Name()
	default:
		return nil, false
	}
	if _, lake := catalog.CutSuffixFold(s.Table, catalog.LakeSuffix); strings.Contains(s.Table, "$") && !lake {
		return nil, false // other virtual tables ("t$changelog") are DuckDB's
	}
	return s, true
}

// scanTokens are the tokens of sql if a plain scan could be made of them:
// names and the punctuation * , . ; and no comment.
func scanTokens(sql string) ([]Token, bool) {
	lx := NewLexer(sql, 0)
	var out []Token
	for t := lx.Next(); t.Kind != TokEOF; t = lx.Next() {
		switch {
		case t.Kind == TokIdent, t.Kind == TokQuoted:
		case t.Kind == TokPunct && strings.Contains("*,.;", t.Text):
		default:
			return nil, false
		}
		out = append(out, t)
	}
	return out, !lx.Comments
}

// scanKeywords are not names in a plain scan: with them the statement is
// more than a scan.
var scanKeywords = map[string]bool{"select": true, "from": true, "where": true, "distinct": true, "as": true,
	"limit": true, "order": true, "group": true, "union": true, "join": true, "all": true}

func isPunct(t Token, p string) bool { return t.Kind == TokPunct && t.Text == p }

func isScanName(t Token) bool {
	return t.Kind == TokQuoted || (t.Kind == TokIdent && !scanKeywords[strings.ToLower(t.Text)])
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
	case KindDelete:
		return "delete"
	case KindUpdate:
		return "update"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}
