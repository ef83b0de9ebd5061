package catalog

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a positive duration: Go's time.ParseDuration syntax
// ("12h", "30s", "1h30m", "500ms") plus a day unit "d" of 24 hours ("7d",
// "1d12h"). Spaces around the value are ignored.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var total time.Duration
	rest := s
	for rest != "" {
		num := leadingNumber(rest)
		unitEnd := len(num)
		for unitEnd < len(rest) && isUnitLetter(rest[unitEnd]) {
			unitEnd++
		}
		if num == "" || unitEnd == len(num) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d, err := durationPart(num, rest[len(num):unitEnd])
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		total += d
		rest = rest[unitEnd:]
	}
	if total <= 0 {
		return 0, fmt.Errorf("invalid duration %q: must be positive", s)
	}
	return total, nil
}

func durationPart(num, unit string) (time.Duration, error) {
	if unit != "d" {
		return time.ParseDuration(num + unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f*24 > math.MaxInt64/float64(time.Hour) {
		return 0, fmt.Errorf("bad day count %q", num)
	}
	return time.Duration(f * 24 * float64(time.Hour)), nil
}

func isUnitLetter(c byte) bool { return c >= 'a' && c <= 'z' || c == 0xc2 || c == 0xb5 }

// leadingNumber returns the digits and at most one '.' at the start of s.
func leadingNumber(s string) string {
	dot := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && !dot:
			dot = true
		default:
			return s[:i]
		}
	}
	return s
}

// sizeUnits are the byte units of ParseSize, lower-cased. KB, MB, GB and TB
// are decimal (SI); KiB, MiB, GiB and TiB are binary; the one-letter forms
// K, M, G, T are binary, as in Flink and JVM flags.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
}

// ParseSize parses a byte size: a plain number of bytes ("1048576") or a
// number with a unit ("256MiB", "1GB", "1.5 GiB"); units are case-insensitive.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num := leadingNumber(s)
	mult, ok := sizeUnits[strings.ToLower(strings.TrimSpace(s[len(num):]))]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	n := f * float64(mult)
	if n != math.Trunc(n) {
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
	}
	return int64(n), nil
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo, else "".
func suggest(s string, candidates []string) string {
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted) // ties go to the first name, deterministically
	best, bestDist := "", len(s)/3+2
	for _, c := range sorted {
		if d := editDistance(s, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
