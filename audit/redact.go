package audit

import "strings"

// Redact replaces what follows every PASSWORD keyword in a statement
// with '***', so that CREATE USER alice WITH PASSWORD 'secret' is logged
// as CREATE USER alice WITH PASSWORD '***'. The scan skips string
// literals and quoted identifiers, and follows SQL's doubled quote inside
// a literal; a prefixed literal (E'…') is redacted whole, whatever else
// follows PASSWORD up to the next space or delimiter, and an unterminated
// literal to the end of the statement: what might be a password never
// passes.
//
// It works on the text rather than on a parse: a statement the parser
// refuses (a failed CREATE USER) must be redacted as well.
func Redact(stmt string) string { return redact(stmt, true) }

// redactQuoted is Redact for prose that may quote a statement (an error
// message): only literals after PASSWORD are redacted, so that "change its
// password with ALTER USER" reads as it is.
func redactQuoted(text string) string { return redact(text, false) }

func redact(stmt string, words bool) string {
	var b strings.Builder
	done := 0 // stmt[:done] is in b, or nothing is when b is empty
	for i := 0; i < len(stmt); {
		switch c := stmt[i]; {
		case c == '\'':
			i = literalEnd(stmt, i) // a literal that does not follow PASSWORD
		case c == '"':
			i = quotedEnd(stmt, i)
		case isIdent(c) && (i == 0 || !isIdent(stmt[i-1])):
			w := i
			for w < len(stmt) && isIdent(stmt[w]) {
				w++
			}
			if !strings.EqualFold(stmt[i:w], "PASSWORD") {
				i = w
				continue
			}
			j := w
			for j < len(stmt) && isSpace(stmt[j]) {
				j++
			}
			end := secretEnd(stmt, j, words)
			if end == j {
				i = j
				continue
			}
			b.WriteString(stmt[done:j])
			b.WriteString("'***'")
			done, i = end, end
		default:
			i++
		}
	}
	if b.Len() == 0 {
		return stmt
	}
	b.WriteString(stmt[done:])
	return b.String()
}

// secretEnd is the end of what follows PASSWORD at j: a literal, a
// prefixed literal (E'…'), or else a word up to the next space or
// delimiter (NULL, a parameter, a typo: redacted all the same, in case it
// is the password) when words is set. It is j when nothing follows.
func secretEnd(s string, j int, words bool) int {
	switch {
	case j >= len(s):
		return j
	case s[j] == '\'':
		return literalEnd(s, j)
	case j+1 < len(s) && s[j+1] == '\'' && isIdent(s[j]):
		return literalEnd(s, j+1)
	case !words:
		return j
	}
	end := j
	for end < len(s) && !isSpace(s[end]) && s[end] != ';' && s[end] != ',' && s[end] != ')' {
		end++
	}
	return end
}

// quotedEnd is the index just past the quoted identifier starting at the
// double quote at i, or len(s).
func quotedEnd(s string, i int) int {
	if k := strings.IndexByte(s[i+1:], '"'); k >= 0 {
		return i + 1 + k + 1
	}
	return len(s)
}

// literalEnd is the index just past the SQL string literal starting at
// the quote at i, or len(s) when it is not terminated.
func literalEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] != '\'' {
			continue
		}
		if j+1 < len(s) && s[j+1] == '\'' {
			j++ // '' is a quote inside the literal
			continue
		}
		return j + 1
	}
	return len(s)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= 0x80
}
