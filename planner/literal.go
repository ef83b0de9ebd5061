package planner

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// SQL literal rules: what a constant compared with a column is in the
// column's type, as DuckDB reads it. The changes() filter (filter.go)
// compares rows with these values exactly; filter pushdown
// (planner/duck/filtervalues.go) turns them into scan filters that may only
// skip rows the comparison drops. Both use this file, so a subscription and
// a query over the same table agree on what a literal means.
//
// Each conversion accepts a subset of what DuckDB accepts and, for what it
// accepts, gives DuckDB's value; anything else is an error (the changes()
// filter refuses the condition, pushdown pushes nothing). The engine runs
// with TimeZone=UTC (duck/engine.go). The rules, checked against the
// engine (duck/literal_test.go):
//
//   - Numbers: 42 and 1.5 are exact (INTEGER, DECIMAL); a literal with an
//     exponent (1e3) or more than 38 digits is a DOUBLE. An integer column
//     compares exactly with an exact literal, and as a DOUBLE with a DOUBLE
//     literal (exact below 2^53). A decimal column compares exactly with an
//     exact literal, as a DOUBLE with a DOUBLE. A float column rounds an
//     exact literal to its own precision and compares a DOUBLE literal as
//     a DOUBLE (a FLOAT 0.1 is not 1e-1).
//   - Strings compared with a column are cast to the column's type:
//     integers [+-]digits (spaces around allowed), in the column's range;
//     decimals a number rounded half away from zero to the column's scale;
//     floats a number, NaN or [+-]inf[inity] (any case, spaces around
//     allowed); booleans true/t/yes/y/1 and false/f/no/n/0 (any case);
//     blobs ASCII with \xHH escapes; dates, times and timestamps as below.
//   - DATE: YYYY-M[M]-D[D], a real calendar day from year 1, spaces around
//     allowed.
//   - TIME: H[H]:MM[:SS[.fraction]], hours 0 to 23; the fraction is
//     truncated to microseconds, as DuckDB truncates it.
//   - TIMESTAMP and TIMESTAMPTZ: a DATE, or a DATE, a space or T, and a
//     TIME; after the seconds, an offset Z, ±HH, ±HHMM or ±HH:MM (HH up to
//     23). Spaces may lead, and trail a time with seconds. A literal
//     without an offset is UTC.
//     An offset is honoured where DuckDB reads the text as a TIMESTAMPTZ
//     (a TIMESTAMPTZ literal, or a string compared with a TIMESTAMPTZ
//     column) and ignored where it reads a TIMESTAMP (a TIMESTAMP literal,
//     or a string compared with a TIMESTAMP column): DuckDB keeps the digits
//     and drops the offset. Named zones, 'infinity', 'epoch', BC dates and
//     an offset after HH:MM are refused.
//   - A date column compares with a timestamp literal as a timestamp (the
//     date at midnight UTC); a timestamp column with a date literal
//     likewise.

// ConstKind is what a constant is.
type ConstKind uint8

// The kinds of constant.
const (
	ConstExact  ConstKind = iota + 1 // an integer or DECIMAL literal: Exact
	ConstDouble                      // a DOUBLE literal (1e3): Double
	ConstString                      // a string literal, typed As
	ConstBool                        // TRUE or FALSE: Bool
)

// StringType is the type a string constant is written as.
type StringType string

// The typed string literals, and AsColumn for a bare 'string', which
// DuckDB casts to the compared column's type.
const (
	AsColumn      StringType = ""
	AsVarchar     StringType = "VARCHAR"
	AsBlob        StringType = "BLOB"
	AsDate        StringType = "DATE"
	AsTime        StringType = "TIME"
	AsTimestamp   StringType = "TIMESTAMP"
	AsTimestampTZ StringType = "TIMESTAMPTZ"
)

// Const is a constant compared with a column, however it was written.
type Const struct {
	Kind   ConstKind
	Exact  *big.Rat
	Double float64
	Str    string
	As     StringType
	Bool   bool
}

// conversionError says what a constant could not be converted to: the
// caller names the constant.
type conversionError string

func (e conversionError) Error() string { return string(e) }

// NumberConst reads the text of a number literal as DuckDB types it: with
// an exponent, or more than 38 digits, a DOUBLE; otherwise exact.
func NumberConst(text string) (Const, error) {
	digits := 0
	for _, c := range text {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	if !isNumber(text) {
		return Const{}, conversionError("a number")
	}
	if strings.ContainsAny(text, "eE") || digits > 38 {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return Const{}, conversionError("a number")
		}
		return Const{Kind: ConstDouble, Double: f}, nil
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return Const{}, conversionError("a number")
	}
	return Const{Kind: ConstExact, Exact: r}, nil
}

// isNumber reports whether s is [+-]digits[.digits][e[+-]digits] with a
// digit before or after the point: the numbers of SQL, and of the strings
// DuckDB casts to numbers that these rules accept (no hex, no _).
func isNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	n := scanDigits(s[i:])
	i += n
	if i < len(s) && s[i] == '.' {
		i++
		m := scanDigits(s[i:])
		i += m
		n += m
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		m := scanDigits(s[i:])
		if m == 0 {
			return false
		}
		i += m
	}
	return i == len(s)
}

// scanDigits is the number of ASCII digits s starts with.
func scanDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// Pow10 is 10^n.
func Pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// IntegerRat is c compared with an integer column of type dt, exactly. A
// DOUBLE is exact only below 2^53 in magnitude: beyond, DuckDB compares
// the column converted to DOUBLE, which the caller must do itself. A
// string is cast to dt: an integer in its range.
func (c Const) IntegerRat(dt arrow.DataType) (*big.Rat, error) {
	switch c.Kind {
	case ConstExact:
		return c.Exact, nil
	case ConstDouble:
		if math.Abs(c.Double) < 1<<53 {
			return new(big.Rat).SetFloat64(c.Double), nil
		}
		return nil, conversionError("an exact integer (beyond 2^53 a DOUBLE compares as a DOUBLE)")
	case ConstString:
		s := strings.TrimSpace(c.Str)
		body := s
		if body != "" && (body[0] == '+' || body[0] == '-') {
			body = body[1:]
		}
		if c.As != AsColumn || body == "" || scanDigits(body) != len(body) {
			break
		}
		if v, _ := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10); intFits(dt, v) {
			return new(big.Rat).SetInt(v), nil
		}
	}
	return nil, conversionError(integerName(dt))
}

func integerName(dt arrow.DataType) string { return "an integer (" + dt.String() + ")" }

// intFits reports whether v is a value of the integer type dt.
func intFits(dt arrow.DataType, v *big.Int) bool {
	bits, signed := 64, true
	switch dt.ID() {
	case arrow.INT8:
		bits = 8
	case arrow.INT16:
		bits = 16
	case arrow.INT32:
		bits = 32
	case arrow.UINT8:
		bits, signed = 8, false
	case arrow.UINT16:
		bits, signed = 16, false
	case arrow.UINT32:
		bits, signed = 32, false
	case arrow.UINT64:
		signed = false
	}
	if !signed {
		return v.Sign() >= 0 && v.BitLen() <= bits
	}
	lo := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
	hi := new(big.Int).Sub(new(big.Int).Neg(lo), big.NewInt(1))
	return v.Cmp(lo) >= 0 && v.Cmp(hi) <= 0
}

// IntegerBound turns x op r, for an integer x and a rational r, into x op'
// v for an integer v with the same truth for every integer x: for a
// fraction, x < r and x <= r are x <= floor(r), x > r and x >= r are x >
// floor(r). When no integer bound says it, konst is the outcome for every
// x: x = fraction never holds (-1), x <> fraction always does (1).
func IntegerBound(op Op, r *big.Rat) (_ Op, v *big.Int, konst int) {
	if r.IsInt() {
		return op, new(big.Int).Set(r.Num()), 0
	}
	v = new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: the floor, the denominator being positive
	switch op {
	case OpEq:
		return op, v, -1
	case OpNe:
		return op, v, 1
	case OpLt:
		op = OpLe
	case OpGe:
		op = OpGt
	}
	return op, v, 0
}

// DecimalRat is c compared with a decimal column of the given scale, as
// the unscaled value: c times 10^scale. A string is cast to the column's
// type, rounded half away from zero to its scale; a DOUBLE compares as a
// DOUBLE, which the caller must do itself.
func (c Const) DecimalRat(scale int32) (*big.Rat, error) {
	pow := new(big.Rat).SetInt(Pow10(scale))
	switch c.Kind {
	case ConstExact:
		return new(big.Rat).Mul(c.Exact, pow), nil
	case ConstString:
		s := strings.TrimSpace(c.Str)
		if c.As != AsColumn || !isNumber(s) {
			break
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			break
		}
		return new(big.Rat).SetInt(roundHalfAway(r.Mul(r, pow))), nil
	}
	return nil, conversionError("a number")
}

// roundHalfAway is r rounded to an integer, halves away from zero.
func roundHalfAway(r *big.Rat) *big.Int {
	a := new(big.Rat).Abs(r)
	a.Add(a, big.NewRat(1, 2))
	v := new(big.Int).Quo(a.Num(), a.Denom())
	if r.Sign() < 0 {
		v.Neg(v)
	}
	return v
}

// FloatValue is c compared with a float column of bits (32 or 64): an
// exact number or a string rounded to the column's precision, a DOUBLE as
// it is (DuckDB compares a FLOAT column with it as a DOUBLE).
func (c Const) FloatValue(bits int) (float64, error) {
	switch c.Kind {
	case ConstExact:
		if bits == 32 {
			f, _ := c.Exact.Float32()
			return float64(f), nil
		}
		f, _ := c.Exact.Float64()
		return f, nil
	case ConstDouble:
		return c.Double, nil
	case ConstString:
		if c.As == AsColumn {
			if f, ok := parseFloat(strings.TrimSpace(c.Str), bits); ok {
				return f, nil
			}
		}
	}
	return 0, conversionError("a floating-point number")
}

// parseFloat reads a number, nan or [+-]inf[inity] in any case; a number
// beyond the type's range is refused.
func parseFloat(s string, bits int) (float64, bool) {
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "nan":
		return math.NaN(), true
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if !isNumber(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, bits)
	return f, err == nil
}

// BoolValue is c compared with a boolean column.
func (c Const) BoolValue() (bool, error) {
	switch c.Kind {
	case ConstBool:
		return c.Bool, nil
	case ConstString:
		if c.As == AsColumn {
			if b, ok := ParseBool(c.Str); ok {
				return b, nil
			}
		}
	}
	return false, conversionError("a boolean")
}

// ParseBool reads a string cast to BOOLEAN as DuckDB does.
func ParseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "true", "t", "yes", "y", "1":
		return true, true
	case "false", "f", "no", "n", "0":
		return false, true
	}
	return false, false
}

// TextValue is c compared with a VARCHAR column.
func (c Const) TextValue() (string, error) {
	if c.Kind == ConstString && (c.As == AsColumn || c.As == AsVarchar) {
		return c.Str, nil
	}
	return "", conversionError("a 'string'")
}

// BlobValue is c compared with a BLOB column: the string's bytes, \xHH
// escapes decoded; a backslash without one, or a byte beyond ASCII, is an
// error, as in DuckDB's cast.
func (c Const) BlobValue() ([]byte, error) {
	if c.Kind != ConstString || (c.As != AsColumn && c.As != AsBlob) {
		return nil, conversionError("a 'string'")
	}
	s := c.Str
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] >= 0x80:
			return nil, conversionError(`a blob (escape bytes beyond ASCII as \xHH)`)
		case s[i] != '\\':
			out = append(out, s[i])
		default:
			if i+3 >= len(s) || s[i+1] != 'x' {
				return nil, conversionError(`a blob (a backslash starts a \xHH escape)`)
			}
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return nil, conversionError(`a blob (a backslash starts a \xHH escape)`)
			}
			out = append(out, byte(v))
			i += 3
		}
	}
	return out, nil
}
