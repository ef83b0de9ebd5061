package duck

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/internal/scan"
)

// Constants to filter values: a constant of the parse tree becomes a value
// of the column's Go type (as tables/prune.go documents it) such that the
// filter holds for every row where DuckDB's comparison does. Exact where
// DuckDB compares exactly, looser where it rounds, dropped where unsure:
//
//   - integer, decimal, date, time and timestamp columns compare exactly
//     with integer and DECIMAL literals (DuckDB widens both sides to a
//     common decimal): a bound between two column values becomes the
//     nearest one on the safe side (id < 2.5 is id <= 2; id = 2.5 is
//     dropped, as it holds for no row). A DOUBLE literal (1e3) against
//     an integer column is exact below 2^53, dropped above; against a
//     decimal column it is dropped (DuckDB compares as doubles).
//   - float columns: DuckDB rounds the literal (to FLOAT against a FLOAT
//     column, measured), so bounds are widened by two units in the last
//     place of the column's precision and = becomes a range.
//   - strings and blobs compare bytewise; a blob literal with a backslash
//     (an escape) is dropped.
//   - dates and timestamps: literals in the forms YYYY-MM-DD and
//     YYYY-MM-DD[ T]HH:MM[:SS[.ffffff]], with a Z or ±HH[:MM] offset only
//     where DuckDB reads it as TIMESTAMPTZ; anything else (named zones,
//     'infinity', nanoseconds) is dropped. The engine's TimeZone is UTC
//     (engine.go), so a TIMESTAMP and a TIMESTAMPTZ with the same digits
//     are the same instant, and a date is midnight UTC.
//   - timestamp columns in s or ms are seen by DuckDB as their exact µs; in
//     ns, as the µs truncated toward zero (vectors.go): the bound is
//     widened by 999 ns.
//
// filtersFor returns nil when no filter can be pushed, two for a widened =.
func filtersFor(col int, typ arrow.DataType, op string, c constant) []scan.Filter {
	if op == "IS NULL" || op == "IS NOT NULL" {
		return []scan.Filter{{Column: col, Op: op}}
	}
	one := func(op string, v any) []scan.Filter { return []scan.Filter{{Column: col, Op: op, Value: v}} }
	switch t := typ.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		r, ok := numericRat(c, true)
		if !ok {
			return nil
		}
		op, k, ok := integerBound(op, r)
		if !ok {
			return nil
		}
		if v, ok := intValue(typ, k); ok {
			return one(op, v)
		}
	case *arrow.Float32Type, *arrow.Float64Type:
		return floatFilters(col, typ, op, c)
	case *arrow.Decimal128Type:
		r, ok := numericRat(c, false)
		if !ok {
			return nil
		}
		r.Mul(r, new(big.Rat).SetInt(pow10(t.Scale)))
		op, k, ok := integerBound(op, r)
		if !ok || k.BitLen() > 126 {
			return nil
		}
		return one(op, decimal128.FromBigInt(k))
	case *arrow.StringType, *arrow.LargeStringType:
		if c.kind == constString && (c.as == "" || c.as == "VARCHAR") {
			return one(op, c.s)
		}
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		if c.kind == constString && (c.as == "" || c.as == "BLOB") && !strings.Contains(c.s, `\`) {
			return one(op, []byte(c.s))
		}
	case *arrow.BooleanType:
		if c.kind == constBool {
			return one(op, c.b)
		}
	case *arrow.Date32Type:
		return dateFilters(col, op, c)
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond || c.kind != constString || (c.as != "" && c.as != "TIME") {
			return nil
		}
		if us, ok := parseTime(c.s); ok {
			return one(op, arrow.Time64(us))
		}
	case *arrow.TimestampType:
		return timestampFilters(col, t, op, c)
	}
	return nil
}

// numericRat is the exact value of a numeric constant; a DOUBLE only if
// allowDouble and it is below 2^53 in magnitude, where an integer column
// converted to double compares as the integer does.
func numericRat(c constant, allowDouble bool) (*big.Rat, bool) {
	switch c.kind {
	case constNumber:
		return ratOf(c), true
	case constFloat:
		if allowDouble && math.Abs(c.f) < 1<<53 {
			return new(big.Rat).SetFloat64(c.f), true
		}
	}
	return nil, false
}

func ratOf(c constant) *big.Rat {
	r := new(big.Rat).SetInt(c.num)
	if c.scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(pow10(c.scale)))
	}
	return r
}

func pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// exactInt is a numeric constant's value if it is a whole number.
func exactInt(c constant) (*big.Int, bool) {
	r := ratOf(c)
	if !r.IsInt() {
		return nil, false
	}
	return new(big.Int).Set(r.Num()), true
}

// integerBound turns "x op r", x an integer, into "x op' k" with k an
// integer and the same truth for every integer x; ok is false for an = that
// no integer satisfies.
func integerBound(op string, r *big.Rat) (string, *big.Int, bool) {
	if r.IsInt() {
		return op, new(big.Int).Set(r.Num()), true
	}
	floor := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
	switch op {
	case "<", "<=":
		return "<=", floor, true
	case ">", ">=":
		return ">=", floor.Add(floor, big.NewInt(1)), true
	}
	return "", nil, false
}

// intValue is k as the Go value of an integer column type, if it fits.
func intValue(typ arrow.DataType, k *big.Int) (any, bool) {
	if k.IsInt64() {
		v := k.Int64()
		switch typ.ID() {
		case arrow.INT8:
			return int8(v), v >= math.MinInt8 && v <= math.MaxInt8
		case arrow.INT16:
			return int16(v), v >= math.MinInt16 && v <= math.MaxInt16
		case arrow.INT32:
			return int32(v), v >= math.MinInt32 && v <= math.MaxInt32
		case arrow.INT64:
			return v, true
		}
	}
	if k.Sign() < 0 || !k.IsUint64() {
		return nil, false
	}
	v := k.Uint64()
	switch typ.ID() {
	case arrow.UINT8:
		return uint8(v), v <= math.MaxUint8
	case arrow.UINT16:
		return uint16(v), v <= math.MaxUint16
	case arrow.UINT32:
		return uint32(v), v <= math.MaxUint32
	case arrow.UINT64:
		return v, true
	}
	return nil, false
}

// floatFilters widens the constant by two units in the last place of the
// column's precision on the side that keeps rows.
func floatFilters(col int, typ arrow.DataType, op string, c constant) []scan.Filter {
	var f float64
	switch c.kind {
	case constNumber:
		f, _ = ratOf(c).Float64()
	case constFloat:
		f = c.f
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	var lo, hi any
	if typ.ID() == arrow.FLOAT32 {
		f32 := float32(f)
		if math.IsInf(float64(f32), 0) {
			return nil
		}
		l, h := f32, f32
		for range 2 {
			l = math.Nextafter32(l, float32(math.Inf(-1)))
			h = math.Nextafter32(h, float32(math.Inf(1)))
		}
		lo, hi = l, h
	} else {
		l, h := f, f
		for range 2 {
			l = math.Nextafter(l, math.Inf(-1))
			h = math.Nextafter(h, math.Inf(1))
		}
		lo, hi = l, h
	}
	switch op {
	case "<", "<=":
		return []scan.Filter{{Column: col, Op: "<=", Value: hi}}
	case ">", ">=":
		return []scan.Filter{{Column: col, Op: ">=", Value: lo}}
	}
	return []scan.Filter{{Column: col, Op: ">=", Value: lo}, {Column: col, Op: "<=", Value: hi}}
}

const microsPerDay = 86_400_000_000

// dateFilters: a date column compared with a date (exactly), or with a
// timestamp (DuckDB casts the date to midnight).
func dateFilters(col int, op string, c constant) []scan.Filter {
	if c.kind != constString {
		return nil
	}
	var r *big.Rat
	switch c.as {
	case "", "DATE":
		d, ok := parseDate(c.s)
		if !ok {
			return nil
		}
		r = new(big.Rat).SetInt64(d)
	case "TIMESTAMP", "TIMESTAMP WITH TIME ZONE":
		us, ok := parseTimestamp(c.s, c.as != "TIMESTAMP")
		if !ok {
			return nil
		}
		r = big.NewRat(us, microsPerDay)
	default:
		return nil
	}
	op, k, ok := integerBound(op, r)
	if !ok || !k.IsInt64() || k.Int64() < math.MinInt32 || k.Int64() > math.MaxInt32 {
		return nil
	}
	return []scan.Filter{{Column: col, Op: op, Value: arrow.Date32(k.Int64())}}
}

// timestampFilters: a timestamp column compared with a date or timestamp
// literal, in the column's unit.
func timestampFilters(col int, t *arrow.TimestampType, op string, c constant) []scan.Filter {
	if c.kind != constString {
		return nil
	}
	var us int64
	var ok bool
	switch c.as {
	case "":
		// Cast to the column's own type: an offset counts only for
		// TIMESTAMPTZ.
		us, ok = parseTimestamp(c.s, t.TimeZone != "")
	case "TIMESTAMP":
		us, ok = parseTimestamp(c.s, false)
	case "TIMESTAMP WITH TIME ZONE":
		us, ok = parseTimestamp(c.s, true)
	case "DATE":
		var d int64
		if d, ok = parseDate(c.s); ok {
			us, ok = d*microsPerDay, d > math.MinInt64/microsPerDay && d < math.MaxInt64/microsPerDay
		}
	}
	if !ok {
		return nil
	}
	var out []scan.Filter
	add := func(op string, k *big.Int) bool {
		if !k.IsInt64() {
			return false
		}
		out = append(out, scan.Filter{Column: col, Op: op, Value: arrow.Timestamp(k.Int64())})
		return true
	}
	switch t.Unit {
	case arrow.Microsecond:
		add(op, big.NewInt(us))
	case arrow.Second, arrow.Millisecond:
		per := int64(1_000_000)
		if t.Unit == arrow.Millisecond {
			per = 1_000
		}
		op, k, ok := integerBound(op, big.NewRat(us, per))
		if !ok || !add(op, k) {
			return nil
		}
	case arrow.Nanosecond:
		// DuckDB sees v/1000 truncated toward zero: trunc(v/1000) >= c
		// implies v >= 1000c - 999, <= c implies v <= 1000c + 999.
		lo, hi := us, us
		switch op {
		case ">":
			lo = us + 1
		case "<":
			hi = us - 1
		}
		k := func(c, d int64) *big.Int {
			b := big.NewInt(c)
			b.Mul(b, big.NewInt(1000))
			return b.Add(b, big.NewInt(d))
		}
		if op != "<" && op != "<=" && !add(">=", k(lo, -999)) {
			return nil
		}
		if op != ">" && op != ">=" && !add("<=", k(hi, 999)) {
			return nil
		}
	default:
		return nil
	}
	return out
}

// parseDate reads YYYY-MM-DD (month and day of one or two digits, as
// DuckDB accepts) into days since 1970-01-01.
func parseDate(s string) (int64, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || len(parts[0]) != 4 || len(parts[1]) < 1 || len(parts[1]) > 2 || len(parts[2]) < 1 || len(parts[2]) > 2 {
		return 0, false
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p[0] < '0' || p[0] > '9' {
			return 0, false
		}
		n[i] = v
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

// parseTime reads HH:MM[:SS[.ffffff]] into microseconds since midnight.
func parseTime(s string) (int64, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	h, ok1 := twoDigits(parts[0], 23)
	m, ok2 := twoDigits(parts[1], 59)
	if !ok1 || !ok2 {
		return 0, false
	}
	var sec, frac int64
	if len(parts) == 3 {
		whole, f, hasFrac := strings.Cut(parts[2], ".")
		v, ok := twoDigits(whole, 59)
		if !ok || (hasFrac && (len(f) == 0 || len(f) > 6)) {
			return 0, false
		}
		sec = v
		if hasFrac {
			for _, c := range f {
				if c < '0' || c > '9' {
					return 0, false
				}
			}
			fv, _ := strconv.ParseInt(f+strings.Repeat("0", 6-len(f)), 10, 64)
			frac = fv
		}
	}
	return ((h*60+m)*60+sec)*1_000_000 + frac, true
}

func twoDigits(s string, maxV int64) (int64, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	v := int64(s[0]-'0')*10 + int64(s[1]-'0')
	return v, v <= maxV
}

// parseTimestamp reads YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]][offset]] into
// microseconds since the epoch, UTC. An offset (Z, ±HH, ±HH:MM, ±HHMM) is
// accepted only with offsets, as DuckDB reads a TIMESTAMPTZ.
func parseTimestamp(s string, offsets bool) (int64, bool) {
	date, clock, hasClock := strings.Cut(s, " ")
	if !hasClock {
		date, clock, hasClock = strings.Cut(s, "T")
	}
	days, ok := parseDate(date)
	if !ok {
		return 0, false
	}
	var us, off int64
	if hasClock {
		var zoned bool
		clock, off, zoned, ok = cutOffset(clock)
		if !ok || (zoned && !offsets) {
			return 0, false
		}
		if us, ok = parseTime(clock); !ok {
			return 0, false
		}
	}
	const maxDays = math.MaxInt64/microsPerDay - 1
	if days > maxDays || days < -maxDays {
		return 0, false
	}
	return days*microsPerDay + us - off, true
}

// cutOffset splits a UTC offset from the end of a clock time; off is in
// microseconds, zoned says whether there was one.
func cutOffset(clock string) (rest string, off int64, zoned, ok bool) {
	if c, found := strings.CutSuffix(clock, "Z"); found {
		return c, 0, true, true
	}
	i := strings.LastIndexAny(clock, "+-")
	if i < 0 {
		return clock, 0, false, true
	}
	sign, z := int64(1), clock[i+1:]
	if clock[i] == '-' {
		sign = -1
	}
	var h, m int64
	var okH, okM bool
	switch len(z) {
	case 2:
		h, okH = twoDigits(z, 15)
		okM = true
	case 4:
		h, okH = twoDigits(z[:2], 15)
		m, okM = twoDigits(z[2:], 59)
	case 5:
		if z[2] == ':' {
			h, okH = twoDigits(z[:2], 15)
			m, okM = twoDigits(z[3:], 59)
		}
	}
	if !okH || !okM {
		return "", 0, false, false
	}
	return clock[:i], sign * (h*60 + m) * 60 * 1_000_000, true, true
}
