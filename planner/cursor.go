package planner

import (
	"strconv"
	"strings"
)

// cursor walks the tokens of the statements planner parses, one at a
// time: its position is a byte offset of the source, so a parser that
// looks ahead goes back by setting pos.
type cursor struct {
	src string
	pos int
}

// peek is the next token, without moving past it.
func (s *cursor) peek() Token { return NewLexer(s.src, s.pos).Next() }

// take moves past t, a token peek returned.
func (s *cursor) take(t Token) { s.pos = t.End }

// atEnd reports whether only whitespace and comments are left.
func (s *cursor) atEnd() bool { return s.peek().Kind == TokEOF }

// at is the offset of the next token, for error messages.
func (s *cursor) at() int { return s.peek().Pos }

// rest is the source from the next token on.
func (s *cursor) rest() string { return s.src[s.peek().Pos:] }

func (s *cursor) keyword(kw string) bool {
	if t := s.peek(); t.Is(kw) {
		s.take(t)
		return true
	}
	return false
}

// punct moves past the punctuation c.
func (s *cursor) punct(c string) bool {
	if t := s.peek(); t.Kind == TokPunct && t.Text == c {
		s.take(t)
		return true
	}
	return false
}

// ident reads a name, folding unquoted ones to lower case; the keywords
// that start an INSERT's source or end a select list are not names.
func (s *cursor) ident() (string, bool) {
	t := s.peek()
	switch {
	case t.Kind == TokQuoted:
	case t.Kind != TokIdent:
		return "", false
	default:
		switch strings.ToLower(t.Text) {
		case "select", "values", "with", "from", "table":
			return "", false
		}
	}
	s.take(t)
	return t.Name(), true
}

// str reads a single-quoted SQL string.
func (s *cursor) str() (string, bool) {
	if t := s.peek(); t.Kind == TokString {
		s.take(t)
		return t.Text, true
	}
	return "", false
}

// number reads a non-negative integer.
func (s *cursor) number() (int, bool) {
	t := s.peek()
	if t.Kind != TokNumber || scanDigits(t.Text) != len(t.Text) {
		return 0, false
	}
	n, err := strconv.Atoi(t.Text)
	if err == nil {
		s.take(t)
	}
	return n, err == nil
}
