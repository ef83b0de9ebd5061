package duck

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/lakestream/lakestream/planner"
)

// Statements that DuckDB 2.0 parses and the embedded DuckDB 1.5 does not,
// which clients write because their DuckDB takes them, are repaired before
// they are prepared:
//
//   - a keyword as a column alias without AS (SELECT 1 share): 1.5 takes
//     only a few keywords there (barelabels.go); AS is inserted;
//   - the database default in a qualified name (default.t): DEFAULT is a
//     reserved word to DuckDB, so it is quoted ("default".t).
//
// A repair is made only where DuckDB's own parser reports the syntax error
// (json_serialize_sql gives its byte position), one error at a time, and
// only if the repaired statement then parses: a statement is never changed
// unless it could not run as written. maxRepairs bounds the attempts.
const maxRepairs = 64

// repair returns sql repaired, and whether it changed it. It parses only a
// statement that fails to parse, so a valid one costs nothing.
func (e *Engine) repair(sql string) (string, bool) {
	out, changed := sql, false
	for range maxRepairs {
		pos, ok := e.syntaxErrorAt(out)
		if !ok {
			return out, changed // parses (or fails otherwise): done
		}
		fixed, ok := repairAt(out, pos)
		if !ok {
			break
		}
		out, changed = fixed, true
	}
	if !changed {
		return sql, false
	}
	if _, failed := e.syntaxErrorAt(out); failed {
		return sql, false
	}
	return out, true
}

// syntaxErrorAt returns the byte position of sql's first syntax error, as
// DuckDB's parser reports it, and false if it has none there.
func (e *Engine) syntaxErrorAt(sql string) (int, bool) {
	out, err := e.parseJSON(sql)
	if err != nil {
		return 0, false
	}
	var res struct {
		Error    bool   `json:"error"`
		Type     string `json:"error_type"`
		Subtype  string `json:"error_subtype"`
		Position string `json:"position"`
	}
	if json.Unmarshal([]byte(out), &res) != nil || !res.Error || res.Type != "parser" || res.Subtype != "SYNTAX_ERROR" {
		return 0, false
	}
	pos, err := strconv.Atoi(res.Position)
	if err != nil || pos < 0 || pos >= len(sql) {
		return 0, false
	}
	return pos, true
}

// repairAt repairs the token at byte pos, where DuckDB's parser stopped.
func repairAt(sql string, pos int) (string, bool) {
	var prev, tok, next planner.Token
	lx := planner.NewLexer(sql, 0)
	for t := lx.Next(); t.Kind != planner.TokEOF; t = lx.Next() {
		if t.Pos == pos {
			tok, next = t, lx.Next()
			break
		}
		if t.Pos > pos {
			return "", false
		}
		prev = t
	}
	if tok.Kind == planner.TokPunct && tok.Text == "." && prev.Is("default") {
		// SELECT default.t.col: the parser took DEFAULT as the keyword
		// and stops at the dot after it.
		return sql[:prev.Pos] + `"default"` + sql[prev.End:], true
	}
	if tok.Kind != planner.TokIdent {
		return "", false
	}
	word := strings.ToLower(tok.Text)
	switch {
	case word == "default" && next.Kind == planner.TokPunct && next.Text == ".":
		return sql[:tok.Pos] + `"default"` + sql[tok.End:], true
	case bareLabels[word] && endsExpression(prev):
		return sql[:tok.Pos] + "AS " + sql[tok.Pos:], true
	}
	return "", false
}

// endsExpression reports whether t can be the last token of a select-list
// expression, so that a name after it is an alias.
func endsExpression(t planner.Token) bool {
	switch t.Kind {
	case planner.TokIdent, planner.TokQuoted, planner.TokString, planner.TokNumber:
		return true
	case planner.TokPunct:
		return t.Text == ")" || t.Text == "]"
	}
	return false
}
