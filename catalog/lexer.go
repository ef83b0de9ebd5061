package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a DDL token.
type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokIdent          // unquoted identifier or keyword; val is lower-cased
	tokQuoted         // "double quoted" identifier; val keeps case, "" unescaped
	tokString         // 'string literal'; val has '' unescaped
	tokNumber         // unsigned decimal integer
	tokPunct          // one of ( ) , . ; = [ ]
)

// token is one lexeme. pos is its byte offset in the source; text is the
// source text, used in error messages; val is the meaning.
type token struct {
	kind tokKind
	pos  int
	text string
	val  string
}

// lexer splits DDL text into tokens, skipping whitespace and comments.
type lexer struct {
	src string
	pos int
}

// next returns the next token. It is a dispatcher on the first character.
func (lx *lexer) next() (token, error) {
	if err := lx.skipSpaceAndComments(); err != nil {
		return token{}, err
	}
	start := lx.pos
	if start >= len(lx.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c, size := utf8.DecodeRuneInString(lx.src[start:])
	switch {
	case c == '\'':
		return lx.quoted('\'', tokString, "string")
	case c == '"':
		return lx.quoted('"', tokQuoted, "quoted identifier")
	case c >= '0' && c <= '9':
		lx.pos = lx.scan(func(r rune) bool { return r >= '0' && r <= '9' })
		return lx.tok(tokNumber, start, lx.src[start:lx.pos]), nil
	case isIdentStart(c):
		lx.pos = lx.scan(isIdentPart)
		text := lx.src[start:lx.pos]
		return lx.tok(tokIdent, start, strings.ToLower(text)), nil
	case strings.ContainsRune("(),.;=[]", c):
		lx.pos += size
		return lx.tok(tokPunct, start, string(c)), nil
	}
	return token{}, &SyntaxError{Pos: start, Near: string(c), Msg: "unexpected character"}
}

func (lx *lexer) tok(kind tokKind, start int, val string) token {
	return token{kind: kind, pos: start, text: lx.src[start:lx.pos], val: val}
}

// scan returns the offset of the first rune at or after lx.pos not matching ok.
func (lx *lexer) scan(ok func(rune) bool) int {
	i := lx.pos
	for i < len(lx.src) {
		r, size := utf8.DecodeRuneInString(lx.src[i:])
		if !ok(r) {
			break
		}
		i += size
	}
	return i
}

// quoted reads a literal delimited by q in which a doubled q stands for one.
func (lx *lexer) quoted(q byte, kind tokKind, what string) (token, error) {
	start := lx.pos
	var val strings.Builder
	for i := start + 1; i < len(lx.src); i++ {
		if lx.src[i] != q {
			val.WriteByte(lx.src[i])
			continue
		}
		if i+1 < len(lx.src) && lx.src[i+1] == q {
			val.WriteByte(q)
			i++
			continue
		}
		lx.pos = i + 1
		if kind == tokQuoted && val.Len() == 0 {
			return token{}, &SyntaxError{Pos: start, Near: `""`, Msg: "empty quoted identifier"}
		}
		return lx.tok(kind, start, val.String()), nil
	}
	return token{}, &SyntaxError{Pos: start, Near: clip(lx.src[start:]), Msg: "unterminated " + what}
}

func (lx *lexer) skipSpaceAndComments() error {
	for lx.pos < len(lx.src) {
		rest := lx.src[lx.pos:]
		switch {
		case strings.HasPrefix(rest, "--"):
			end := strings.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			lx.pos += end
		case strings.HasPrefix(rest, "/*"):
			end := strings.Index(rest[2:], "*/")
			if end < 0 {
				return &SyntaxError{Pos: lx.pos, Near: "/*", Msg: "unterminated comment"}
			}
			lx.pos += 2 + end + 2
		default:
			r, size := utf8.DecodeRuneInString(rest)
			if !unicode.IsSpace(r) {
				return nil
			}
			lx.pos += size
		}
	}
	return nil
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isIdentPart(r rune) bool { return isIdentStart(r) || unicode.IsDigit(r) }

// IsDDL reports whether sql is a statement for this package: its first word,
// after whitespace and comments, is CREATE, DROP or ALTER. It does not parse
// the rest; Parse does. The planner uses it to route statements.
func IsDDL(sql string) bool {
	lx := &lexer{src: sql}
	if lx.skipSpaceAndComments() != nil {
		return false
	}
	end := lx.scan(isIdentPart)
	switch strings.ToLower(sql[lx.pos:end]) {
	case "create", "drop", "alter", "grant", "revoke":
		return true
	}
	return false
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 24
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
