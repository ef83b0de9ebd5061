package duck

import (
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/internal/scan"
	"github.com/lakestream/lakestream/planner"
)

// Constants to filter values: a constant of the parse tree becomes a value
// of the column's Go type (as tables/prune.go documents it) such that the
// filter holds for every row where DuckDB's comparison does. What a
// constant means in a column's type is planner's literal rules
// (planner/literal.go), shared with the changes() filter; a constant they
// refuse pushes nothing. On top of them, pushdown stays on the safe side:
//
//   - integer, decimal, date, time and timestamp columns compare exactly:
//     a bound between two column values becomes the nearest one on the
//     safe side (id < 2.5 is id <= 2; id = 2.5 is dropped, as it holds for
//     no row). A DOUBLE literal is exact below 2^53 against an integer
//     column, dropped above and against a decimal column (DuckDB compares
//     as doubles).
//   - float columns: DuckDB may round the literal differently from Go (a
//     decimal converted through a double), so bounds are widened by two
//     units in the last place of the column's precision and = becomes a
//     range.
//   - timestamp columns in s or ms are seen by DuckDB as their exact µs; in
//     ns, as the µs truncated toward zero (vectors.go): the bound is
//     widened by 999 ns.
//
// filtersFor returns nil when no filter can be pushed, two for a widened =.
func filtersFor(col int, typ arrow.DataType, op string, c planner.Const) []scan.Filter {
	if op == "IS NULL" || op == "IS NOT NULL" {
		return []scan.Filter{{Column: col, Op: op}}
	}
	one := func(op string, v any) []scan.Filter { return []scan.Filter{{Column: col, Op: op, Value: v}} }
	switch t := typ.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		r, err := c.IntegerRat(typ)
		if err != nil {
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
		r, err := c.DecimalRat(t.Scale)
		if err != nil {
			return nil
		}
		op, k, ok := integerBound(op, r)
		if !ok || k.BitLen() > 126 {
			return nil
		}
		return one(op, decimal128.FromBigInt(k))
	case *arrow.StringType, *arrow.LargeStringType:
		if v, err := c.TextValue(); err == nil {
			return one(op, v)
		}
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		if v, err := c.BlobValue(); err == nil {
			return one(op, v)
		}
	case *arrow.BooleanType:
		if v, err := c.BoolValue(); err == nil {
			return one(op, v)
		}
	case *arrow.Date32Type:
		return dateFilters(col, op, c)
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond {
			return nil
		}
		if us, err := c.TimeMicros(); err == nil {
			return one(op, arrow.Time64(us))
		}
	case *arrow.TimestampType:
		return timestampFilters(col, t, op, c)
	}
	return nil
}

// integerBound is planner.IntegerBound for scan.Filter operators; ok is
// false where it has a constant outcome, which no filter says.
func integerBound(op string, r *big.Rat) (string, *big.Int, bool) {
	bop, k, konst := planner.IntegerBound(planner.Op(op), r)
	return string(bop), k, konst == 0
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
func floatFilters(col int, typ arrow.DataType, op string, c planner.Const) []scan.Filter {
	bits := 64
	if typ.ID() == arrow.FLOAT32 {
		bits = 32
	}
	f, err := c.FloatValue(bits)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	var lo, hi any
	if bits == 32 {
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

// dateFilters: a date column compared with a date (exactly), or with a
// timestamp (DuckDB casts the date to midnight).
func dateFilters(col int, op string, c planner.Const) []scan.Filter {
	r, err := c.DateDays()
	if err != nil {
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
func timestampFilters(col int, t *arrow.TimestampType, op string, c planner.Const) []scan.Filter {
	us, err := c.TimestampMicros(t.TimeZone != "")
	if err != nil {
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
