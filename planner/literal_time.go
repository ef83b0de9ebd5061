package planner

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Dates, times and timestamps of the literal rules (literal.go, which
// says which forms are accepted).

const microsPerDay = 86_400_000_000

// DateDays is c compared with a DATE column, in days since 1970-01-01: a
// timestamp literal is a fraction of a day (DuckDB compares the date as
// midnight UTC of that day).
func (c Const) DateDays() (*big.Rat, error) {
	if c.Kind == ConstString {
		switch c.As {
		case AsColumn, AsDate:
			if d, ok := parseDate(strings.TrimSpace(c.Str)); ok {
				return new(big.Rat).SetInt64(d), nil
			}
		case AsTimestamp, AsTimestampTZ:
			if us, err := parseTimestamp(c.Str, c.As == AsTimestampTZ); err == nil {
				return big.NewRat(us, microsPerDay), nil
			}
		}
	}
	return nil, conversionError("a date")
}

// TimeMicros is c compared with a TIME column, in microseconds since
// midnight.
func (c Const) TimeMicros() (int64, error) {
	if c.Kind == ConstString && (c.As == AsColumn || c.As == AsTime) {
		if us, ok := parseTime(c.Str); ok {
			return us, nil
		}
	}
	return 0, conversionError("a time")
}

// TimestampMicros is c compared with a timestamp column, in microseconds
// since the epoch, UTC; tz says whether the column is a TIMESTAMPTZ, whose
// type a bare string is cast to.
func (c Const) TimestampMicros(tz bool) (int64, error) {
	if c.Kind == ConstString {
		switch c.As {
		case AsColumn, AsTimestamp, AsTimestampTZ:
			honour := c.As == AsTimestampTZ || (c.As == AsColumn && tz)
			if us, err := parseTimestamp(c.Str, honour); err == nil {
				return us, nil
			}
		case AsDate:
			if d, ok := parseDate(strings.TrimSpace(c.Str)); ok && d > math.MinInt64/microsPerDay && d < math.MaxInt64/microsPerDay {
				return d * microsPerDay, nil
			}
		}
	}
	return 0, conversionError("a timestamp")
}

// parseDate reads YYYY-M[M]-D[D] into days since 1970-01-01.
func parseDate(s string) (int64, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || len(parts[0]) != 4 || len(parts[1]) < 1 || len(parts[1]) > 2 || len(parts[2]) < 1 || len(parts[2]) > 2 {
		return 0, false
	}
	var n [3]int
	for i, p := range parts {
		if scanDigits(p) != len(p) {
			return 0, false
		}
		n[i], _ = strconv.Atoi(p)
	}
	if n[0] < 1 {
		return 0, false
	}
	t := time.Date(n[0], time.Month(n[1]), n[2], 0, 0, 0, 0, time.UTC)
	if t.Year() != n[0] || int(t.Month()) != n[1] || t.Day() != n[2] {
		return 0, false // 2025-02-30 and the like: DuckDB refuses them
	}
	return t.Unix() / 86400, true
}

// parseTime reads H[H]:MM[:SS[.fraction]] into microseconds since
// midnight, the fraction truncated to microseconds.
func parseTime(s string) (int64, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	h, okH := clockField(parts[0], 1, 23)
	m, okM := clockField(parts[1], 2, 59)
	if !okH || !okM {
		return 0, false
	}
	var sec, frac int64
	if len(parts) == 3 {
		whole, f, hasFrac := strings.Cut(parts[2], ".")
		v, ok := clockField(whole, 2, 59)
		if !ok || (hasFrac && (f == "" || scanDigits(f) != len(f))) {
			return 0, false
		}
		sec = v
		if f = (f + "000000")[:6]; hasFrac {
			frac, _ = strconv.ParseInt(f, 10, 64)
		}
	}
	return ((h*60+m)*60+sec)*1_000_000 + frac, true
}

// clockField reads a field of minDigits to 2 digits, at most maxV.
func clockField(s string, minDigits int, maxV int64) (int64, bool) {
	if len(s) < minDigits || len(s) > 2 || scanDigits(s) != len(s) {
		return 0, false
	}
	v, _ := strconv.ParseInt(s, 10, 64)
	return v, v <= maxV
}

// parseTimestamp reads a timestamp literal in the forms the rules above
// accept into microseconds since the epoch, UTC. An offset is subtracted
// when honour is set (DuckDB reads a TIMESTAMPTZ) and dropped otherwise
// (a TIMESTAMP keeps the digits).
func parseTimestamp(s string, honour bool) (int64, error) {
	bad := fmt.Errorf("timestamp %q: want 'YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]', optionally with an offset after the seconds (Z, +HH, +HH:MM)", s)
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	trimmed := strings.TrimRightFunc(s, unicode.IsSpace)
	trailing := trimmed != s
	s = trimmed
	date, clock, hasClock := strings.Cut(s, " ")
	if !hasClock {
		date, clock, hasClock = strings.Cut(s, "T")
	}
	days, ok := parseDate(date)
	if !ok {
		return 0, bad
	}
	var us, off int64
	if hasClock {
		clock, off, ok = cutOffset(clock)
		if !ok {
			return 0, bad
		}
		if us, ok = parseTime(clock); !ok {
			return 0, bad
		}
	}
	if trailing && strings.Count(clock, ":") != 2 {
		return 0, bad // DuckDB takes trailing spaces only after the seconds
	}
	const maxDays = math.MaxInt64/microsPerDay - 1
	if days > maxDays || days < -maxDays {
		return 0, bad
	}
	if !honour {
		off = 0
	}
	return days*microsPerDay + us - off, nil
}

// cutOffset splits a UTC offset, in microseconds, from the end of a clock
// time. DuckDB reads one only after the seconds.
func cutOffset(clock string) (rest string, off int64, ok bool) {
	if c, found := strings.CutSuffix(clock, "Z"); found {
		return c, 0, strings.Count(c, ":") == 2
	}
	i := strings.LastIndexAny(clock, "+-")
	if i < 0 {
		return clock, 0, true
	}
	sign, z := int64(1), clock[i+1:]
	if clock[i] == '-' {
		sign = -1
	}
	var h, m int64
	okH, okM := false, true
	switch {
	case len(z) == 2:
		h, okH = clockField(z, 2, 23)
	case len(z) == 4:
		h, okH = clockField(z[:2], 2, 23)
		m, okM = clockField(z[2:], 2, 59)
	case len(z) == 5 && z[2] == ':':
		h, okH = clockField(z[:2], 2, 23)
		m, okM = clockField(z[3:], 2, 59)
	}
	if !okH || !okM || strings.Count(clock[:i], ":") != 2 {
		return "", 0, false
	}
	return clock[:i], sign * (h*60 + m) * 60 * 1_000_000, true
}
