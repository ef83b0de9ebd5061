package difftest

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The canonical result model shared by both sides of the comparison.
//
// Each side reads its native representation (Arrow arrays for Lakestream,
// DuckDB vectors for the reference) into the same small set of Go values,
// and one formatter turns those into text. Keeping the formatter shared
// means a difference in text is a difference in data, never in formatting.
//
//	nil                      NULL
//	bool                     BOOLEAN
//	int64, *big.Int          every integer type (TINYINT … HUGEINT, unsigned):
//	                         int64 when the value fits, else *big.Int
//	decVal                   DECIMAL(p,s): unscaled value and scale
//	float64                  FLOAT and DOUBLE (compared with a tolerance)
//	string                   VARCHAR
//	[]byte                   BLOB
//	dateVal                  DATE (days since 1970-01-01)
//	timeVal                  TIME (microseconds since midnight)
//	tsVal                    TIMESTAMP[_S|_MS|_NS], TIMESTAMPTZ (UTC instant)
//	intervalVal              INTERVAL
//	[]any                    LIST
//	structVal                STRUCT
//	mapVal                   MAP

type decVal struct {
	hi    int64 // the unscaled value, a 128-bit two's-complement integer
	lo    uint64
	scale int
}

type dateVal int32

type timeVal int64

// tsVal is an instant as seconds and nanoseconds since the epoch (UTC).
type tsVal struct{ sec, nsec int64 }

type intervalVal struct {
	months, days int32
	nanos        int64
}

type structVal struct {
	names []string
	vals  []any
}

type mapVal struct{ keys, vals []any }

// tsFrom converts v units of unit (ticks per second) to a tsVal.
func tsFrom(v, perSec int64) tsVal {
	sec, rem := v/perSec, v%perSec
	if rem < 0 {
		sec--
		rem += perSec
	}
	return tsVal{sec: sec, nsec: rem * (1_000_000_000 / perSec)}
}

// intOf, uintOf and int128Of return an integer's canonical value: an int64
// when it fits (the common case, without allocation), else a *big.Int.
func intOf(v int64) any { return v }

func uintOf(v uint64) any {
	if v <= math.MaxInt64 {
		return int64(v)
	}
	return new(big.Int).SetUint64(v)
}

// int128Of is the two's-complement 128-bit integer (hi, lo).
func int128Of(hi int64, lo uint64) any {
	if (hi == 0 && lo <= math.MaxInt64) || (hi == -1 && lo > math.MaxInt64) {
		return int64(lo)
	}
	return big128(hi, lo)
}

func big128(hi int64, lo uint64) *big.Int {
	b := new(big.Int).Lsh(big.NewInt(hi), 64)
	return b.Add(b, new(big.Int).SetUint64(lo))
}

// cell is one formatted value. text is exact for everything but floats,
// whose text is only used to sort; f holds the float for the comparison.
type cell struct {
	text    string
	f       float64
	isFloat bool
}

// canon formats a value. Floats nested in lists or structs are formatted
// exactly (shortest round-trip form): the corpus only nests stored floats,
// never computed ones.
func canon(v any) cell {
	if f, ok := v.(float64); ok {
		return cell{text: sortableFloat(f), f: f, isFloat: true}
	}
	return cell{text: format(v)}
}

// sortableFloat is a float's sort key: coarse enough that values equal
// within the comparison tolerance sort alike (-0 and 0 included).
func sortableFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if f == 0 {
		f = 0 // -0 sorts as 0: SQL compares them equal, and so does cellsEqual
	}
	return "~" + strconv.FormatFloat(f, 'e', 6, 64)
}

func format(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case *big.Int:
		return v.String()
	case decVal:
		return formatDecimal(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return strconv.Quote(v)
	case []byte:
		return "x'" + hex.EncodeToString(v) + "'"
	case dateVal:
		return "date " + time.Unix(int64(v)*86400, 0).UTC().Format("2006-01-02")
	case timeVal:
		d := time.Duration(v) * time.Microsecond
		return fmt.Sprintf("time %02d:%02d:%02d.%06d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60, int64(v)%1_000_000)
	case tsVal:
		return "ts " + time.Unix(v.sec, v.nsec).UTC().Format("2006-01-02 15:04:05.999999999")
	case intervalVal:
		return fmt.Sprintf("interval %d months %d days %d ns", v.months, v.days, v.nanos)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = format(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case structVal:
		parts := make([]string, len(v.vals))
		for i, e := range v.vals {
			parts[i] = strconv.Quote(v.names[i]) + ": " + format(e)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case mapVal:
		parts := make([]string, len(v.keys))
		for i := range v.keys {
			parts[i] = format(v.keys[i]) + "=" + format(v.vals[i])
		}
		return "map{" + strings.Join(parts, ", ") + "}"
	}
	panic(fmt.Sprintf("difftest: no canonical form for %T", v))
}

func formatDecimal(d decVal) string {
	if v, ok := int128Of(d.hi, d.lo).(int64); ok && v != math.MinInt64 {
		return placePoint(strconv.FormatInt(abs(v), 10), v < 0, d.scale)
	}
	u := big128(d.hi, d.lo)
	return placePoint(new(big.Int).Abs(u).String(), u.Sign() < 0, d.scale)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// placePoint writes digits with a decimal point scale digits from the
// right, and a sign.
func placePoint(s string, neg bool, scale int) string {
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// result is a query result in canonical form. Types are DuckDB type names
// as the reference reports them, after the mapping DuckDB's Arrow export
// applies (typeNameOfArrow in lake_test.go, refScalarNames in ref_test.go).
type result struct {
	names []string
	types []string
	rows  [][]cell
}

func (r *result) addRow(vals []any) {
	row := make([]cell, len(vals))
	for i, v := range vals {
		row[i] = canon(v)
	}
	r.rows = append(r.rows, row)
}

// Tolerances for floats: sums and averages of doubles depend on the order
// in which DuckDB's threads combine partial aggregates, on both sides.
const (
	relTol = 1e-9
	absTol = 1e-12
)

func floatsEqual(a, b float64) bool {
	switch {
	case a == b:
		return true
	case math.IsNaN(a) || math.IsNaN(b):
		return math.IsNaN(a) && math.IsNaN(b)
	case math.IsInf(a, 0) || math.IsInf(b, 0):
		return false
	}
	d := math.Abs(a - b)
	return d <= absTol || d <= relTol*math.Max(math.Abs(a), math.Abs(b))
}

func cellsEqual(a, b cell) bool {
	if a.isFloat && b.isFloat {
		return floatsEqual(a.f, b.f)
	}
	return a.isFloat == b.isFloat && a.text == b.text
}

func rowText(row []cell) string {
	parts := make([]string, len(row))
	for i, c := range row {
		if c.isFloat {
			parts[i] = strconv.FormatFloat(c.f, 'g', -1, 64)
		} else {
			parts[i] = c.text
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// compareRows orders rows for the order-insensitive comparison: by text,
// then by exact float value.
func compareRows(a, b []cell) int {
	for i := range a {
		if c := strings.Compare(a[i].text, b[i].text); c != 0 {
			return c
		}
	}
	for i := range a {
		if a[i].isFloat {
			if c := compareFloat(a[i].f, b[i].f); c != 0 {
				return c
			}
		}
	}
	return 0
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// diff compares got (Lakestream) against want (reference) and describes
// every kind of difference it finds; "" means equal. ordered compares the
// rows in order, else as multisets.
func diff(got, want *result, ordered bool) string {
	var b strings.Builder
	if !slices.Equal(got.names, want.names) {
		fmt.Fprintf(&b, "column names differ:\n  lakestream %q\n  reference  %q\n", got.names, want.names)
	}
	if !slices.Equal(got.types, want.types) {
		fmt.Fprintf(&b, "column types differ:\n  lakestream %v\n  reference  %v\n", got.types, want.types)
	}
	if len(got.names) != len(want.names) {
		return b.String()
	}
	g, w := got.rows, want.rows
	if !ordered {
		g, w = slices.Clone(g), slices.Clone(w)
		slices.SortStableFunc(g, compareRows)
		slices.SortStableFunc(w, compareRows)
	}
	if len(g) != len(w) {
		// Rows after a missing one would all differ: the multiset
		// difference below says more.
		fmt.Fprintf(&b, "row counts differ: lakestream %d, reference %d\n", len(g), len(w))
		return b.String() + multisetDiff(g, w)
	}
	shown := 0
	for i := range g {
		if rowsEqual(g[i], w[i]) {
			continue
		}
		if shown == 0 {
			how := "sorted "
			if ordered {
				how = ""
			}
			fmt.Fprintf(&b, "%srows differ:\n", how)
		}
		if shown < 5 {
			fmt.Fprintf(&b, "  row %d\n    lakestream %s\n    reference  %s\n", i, rowText(g[i]), rowText(w[i]))
		}
		shown++
	}
	if shown > 5 {
		fmt.Fprintf(&b, "  ... %d differing rows in all\n", shown)
	}
	if b.Len() > 0 {
		b.WriteString(multisetDiff(g, w))
	}
	return b.String()
}

func rowsEqual(a, b []cell) bool {
	for i := range a {
		if !cellsEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// multisetDiff lists (up to a few) rows only one side has, by exact text:
// the quickest way to see what went missing or was duplicated.
func multisetDiff(got, want [][]cell) string {
	count := make(map[string]int)
	for _, r := range want {
		count[rowText(r)]++
	}
	for _, r := range got {
		count[rowText(r)]--
	}
	var extra, missing []string
	for k, n := range count {
		for ; n < 0; n++ {
			extra = append(extra, k)
		}
		for ; n > 0; n-- {
			missing = append(missing, k)
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	slices.Sort(extra)
	slices.Sort(missing)
	var b strings.Builder
	fmt.Fprintf(&b, "only in lakestream: %d rows, only in reference: %d rows (exact text)\n", len(extra), len(missing))
	for i, r := range extra {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "  + %s\n", r)
	}
	for i, r := range missing {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "  - %s\n", r)
	}
	return b.String()
}
