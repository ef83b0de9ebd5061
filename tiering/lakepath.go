package tiering

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go"
)

// The directory of a partition's files (docs/lake.md, "The Iceberg
// table").
//
// Iceberg's PartitionToPath names it field=value with both URL-escaped
// (region=%C3%BC for ü). Readers disagree on what such a path means:
// pyiceberg, Java Iceberg (Spark) and DuckDB take the path as written, a
// directory literally named region=%C3%BC, while iceberg-go's file systems
// URL-decode it, region=ü. Whichever of the two a file were created at,
// one kind of reader would not find it. So Lakestream writes a path that
// means the same both ways: each segment keeps the letters, digits, '.',
// '-' and '_' of the field name and the value and writes every other byte
// as '~' and two hex digits (region=~C3~BC, a~20b, a~2Fb, ~25); '~' is
// unreserved in URLs, so nothing decodes it. The partition's values are in
// the manifest entries, so no reader parses them back from the path.

// maxPathSegment bounds one escaped field=value segment, below the 255
// bytes a file name may have: a longer one keeps its head and ends with a
// hash of the whole.
const maxPathSegment = 200

// partitionDir is the directory, relative to the data location, of the
// files of partition vals (in spec order).
func partitionDir(spec iceberg.PartitionSpec, vals partitionRecord, sc *iceberg.Schema) string {
	p := spec.PartitionToPath(vals, sc)
	if p == "" {
		return ""
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		name, val, _ := strings.Cut(seg, "=")
		segs[i] = pathSegment(unescapeQuery(name) + "=" + unescapeQuery(val))
	}
	return strings.Join(segs, "/")
}

// unescapeQuery undoes url.QueryEscape, which PartitionToPath applies to
// names and values; its output always decodes.
func unescapeQuery(s string) string {
	u, err := url.QueryUnescape(s)
	if err != nil {
		panic("tiering: PartitionToPath wrote an undecodable segment: " + s)
	}
	return u
}

// pathSegment escapes a partition's field=value as above: the first '='
// is kept, any other is escaped.
func pathSegment(s string) string {
	name, val, _ := strings.Cut(s, "=")
	out := escapePathPart(name) + "=" + escapePathPart(val)
	if len(out) <= maxPathSegment {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	head := out[:maxPathSegment-18]
	if i := strings.LastIndexByte(head[max(0, len(head)-2):], '~'); i >= 0 {
		head = head[:len(head)-2+i] // not inside an escape
	}
	return head + "~~" + hex.EncodeToString(sum[:8])
}

func escapePathPart(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('~')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
