package planner

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The SQL lexer of everything planner parses itself (plain scans, INSERT
// prefixes, changes() and its WHERE) and of planner/duck's look at
// statement text. It follows the lexer of DuckDB's parser (PostgreSQL's,
// which DuckDB lets take Unicode spaces as whitespace): -- comments run to
// the end of the line and /* */ comments nest; a name starts with a
// letter, _ or any other character beyond ASCII and goes on with those,
// digits and $; "quoted names" and 'strings'
// double their quote to hold it. It never fails: what it cannot read is a
// TokInvalid token, and each parser decides what that means.
//
// catalog has a lexer of its own for DDL (catalog/lexer.go): catalog sits
// below planner and cannot import it, and its lexer reports errors
// (unterminated comments, unknown characters) that planner must step over.

// TokenKind is what a token is.
type TokenKind uint8

// The kinds of token.
const (
	TokEOF     TokenKind = iota
	TokIdent             // an unquoted name or keyword; Text as written
	TokQuoted            // a "quoted name"; Text unescaped, never empty
	TokString            // a 'string'; Text unescaped
	TokNumber            // digits[.digits][e[+-]digits] or .digits; no sign
	TokOp                // a comparison: = < <= > >= <> !=
	TokPunct             // any other single character: ( ) , . ; * + - ...
	TokInvalid           // an unterminated string or quoted name, or ""
)

// Token is one lexeme: Pos and End are its byte offsets in the source.
type Token struct {
	Kind     TokenKind
	Pos, End int
	Text     string
}

// Is reports whether t is the unquoted keyword kw, in any case.
func (t Token) Is(kw string) bool { return t.Kind == TokIdent && strings.EqualFold(t.Text, kw) }

// Name is a name as the catalog stores it: unquoted names fold to lower
// case.
func (t Token) Name() string {
	if t.Kind == TokIdent {
		return strings.ToLower(t.Text)
	}
	return t.Text
}

// Lexer reads the tokens of src from a position on.
type Lexer struct {
	src string
	pos int
	// Comments is set once a comment has been skipped.
	Comments bool
}

// NewLexer reads src from byte offset pos.
func NewLexer(src string, pos int) *Lexer { return &Lexer{src: src, pos: pos} }

// SkipSpace moves past whitespace and comments and returns the position
// of the next token.
func (l *Lexer) SkipSpace() int {
	s := l.src
	for l.pos < len(s) {
		switch n := spaceAt(s, l.pos); {
		case n > 0:
			l.pos += n
		case strings.HasPrefix(s[l.pos:], "--"):
			l.Comments = true
			if end := strings.IndexByte(s[l.pos:], '\n'); end >= 0 {
				l.pos += end + 1
			} else {
				l.pos = len(s)
			}
		case strings.HasPrefix(s[l.pos:], "/*"):
			l.Comments = true
			l.pos = blockCommentEnd(s, l.pos)
		default:
			return l.pos
		}
	}
	return l.pos
}

// blockCommentEnd is the offset after the /* */ comment at i, nested
// comments included; the end of s if it is not closed.
func blockCommentEnd(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// Next reads the next token. It is a dispatcher on the first byte.
func (l *Lexer) Next() Token {
	start := l.SkipSpace()
	s := l.src
	if start >= len(s) {
		return Token{Kind: TokEOF, Pos: start, End: start}
	}
	c := s[start]
	switch {
	case c == '\'' || c == '"':
		return l.quoted(c)
	case isNameStart(c):
		end := start + 1
		for end < len(s) && isNamePart(s[end]) && spaceAt(s, end) == 0 {
			end++
		}
		return l.token(TokIdent, end, s[start:end])
	case isDigit(c) || (c == '.' && start+1 < len(s) && isDigit(s[start+1])):
		end := numberEnd(s, start)
		return l.token(TokNumber, end, s[start:end])
	}
	for _, op := range []string{"<=", ">=", "<>", "!=", "<", ">", "="} {
		if strings.HasPrefix(s[start:], op) {
			return l.token(TokOp, start+len(op), op)
		}
	}
	return l.token(TokPunct, start+1, s[start:start+1])
}

func (l *Lexer) token(kind TokenKind, end int, text string) Token {
	t := Token{Kind: kind, Pos: l.pos, End: end, Text: text}
	l.pos = end
	return t
}

// quoted reads a string or quoted name delimited by q, a doubled q
// standing for itself.
func (l *Lexer) quoted(q byte) Token {
	s := l.src
	var b strings.Builder
	for i := l.pos + 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		if q == '"' && b.Len() == 0 {
			return l.token(TokInvalid, i+1, s[l.pos:i+1])
		}
		kind := TokString
		if q == '"' {
			kind = TokQuoted
		}
		return l.token(kind, i+1, b.String())
	}
	return l.token(TokInvalid, len(s), s[l.pos:])
}

// numberEnd is the offset after the number at i: digits[.digits]
// [e[+-]digits], an exponent without digits not being one.
func numberEnd(s string, i int) int {
	i += scanDigits(s[i:])
	if i < len(s) && s[i] == '.' {
		i++
		i += scanDigits(s[i:])
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if n := scanDigits(s[j:]); n > 0 {
			i = j + n
		}
	}
	return i
}

// spaceAt is the length of the whitespace character at s[i], 0 if there
// is none.
func spaceAt(s string, i int) int {
	if c := s[i]; c < utf8.RuneSelf {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if unicode.IsSpace(r) {
		return n
	}
	return 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isNameStart(c byte) bool {
	return c == '_' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isNamePart(c byte) bool { return isNameStart(c) || c == '$' || isDigit(c) }
