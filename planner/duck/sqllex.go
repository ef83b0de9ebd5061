package duck

import "strings"

// A minimal SQL lexer: just enough to find where an EXPLAIN prefix ends and
// where a qualified table name that DuckDB's parser located ends. It never
// decides what a statement is; DuckDB's parser does (names.go).

// skipSpace returns the index of the first byte at or after i that is not
// whitespace or inside a comment (-- line, or /* block */, nested as in
// PostgreSQL, whose grammar DuckDB uses).
func skipSpace(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v':
			i++
		case strings.HasPrefix(s[i:], "--"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return len(s)
			}
			i += end + 1
		case strings.HasPrefix(s[i:], "/*"):
			depth := 0
			for i < len(s) {
				if strings.HasPrefix(s[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(s[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		default:
			return i
		}
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c == '$' || ('0' <= c && c <= '9')
}

// keywordAt reports whether keyword kw (upper case) starts at s[i] as a
// whole word, and returns the index after it.
func keywordAt(s string, i int, kw string) (int, bool) {
	if len(s)-i < len(kw) || !strings.EqualFold(s[i:i+len(kw)], kw) {
		return i, false
	}
	if j := i + len(kw); j < len(s) && isIdentChar(s[j]) {
		return i, false
	}
	return i + len(kw), true
}

// identAt lexes one identifier, quoted ("a""b") or not, at s[i].
func identAt(s string, i int) (name string, next int, ok bool) {
	if i >= len(s) {
		return "", i, false
	}
	if s[i] == '"' {
		var b strings.Builder
		for j := i + 1; j < len(s); j++ {
			if s[j] != '"' {
				b.WriteByte(s[j])
				continue
			}
			if j+1 < len(s) && s[j+1] == '"' {
				b.WriteByte('"')
				j++
				continue
			}
			return b.String(), j + 1, true
		}
		return "", i, false
	}
	if !isIdentStart(s[i]) {
		return "", i, false
	}
	j := i + 1
	for j < len(s) && isIdentChar(s[j]) {
		j++
	}
	return s[i:j], j, true
}

// qualifiedNameAt lexes a dotted name of want parts starting at s[i] and
// returns its parts and the index after it.
func qualifiedNameAt(s string, i, want int) (parts []string, next int, ok bool) {
	for len(parts) < want {
		if len(parts) > 0 {
			i = skipSpace(s, i)
			if i >= len(s) || s[i] != '.' {
				return nil, i, false
			}
			i = skipSpace(s, i+1)
		}
		name, j, ok := identAt(s, i)
		if !ok {
			return nil, i, false
		}
		parts = append(parts, name)
		i = j
	}
	return parts, i, true
}

// explainPrefix returns the length of a leading "EXPLAIN [ANALYZE|ANALYSE]
// [VERBOSE] [(options)]" and whether there is one. The rest of the text is
// the explained statement.
func explainPrefix(s string) (int, bool) {
	i, ok := keywordAt(s, skipSpace(s, 0), "EXPLAIN")
	if !ok {
		return 0, false
	}
	i = skipSpace(s, i)
	for _, kw := range []string{"ANALYZE", "ANALYSE", "VERBOSE"} {
		if j, ok := keywordAt(s, i, kw); ok {
			i = skipSpace(s, j)
		}
	}
	if i < len(s) && s[i] == '(' {
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				depth--
			case '\'', '"':
				q := s[i]
				for i++; i < len(s) && s[i] != q; i++ {
				}
			}
			if depth == 0 {
				i++
				break
			}
		}
		i = skipSpace(s, i)
	}
	return i, true
}
