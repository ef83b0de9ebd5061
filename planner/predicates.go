package planner

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The predicates of a changes() filter: a condition bound to its column's
// type, the literal converted by the rules of literal.go, evaluated with
// plain loops over the typed arrays.

// Const is the literal as the rules of literal.go read it.
func (l Literal) Const() (Const, error) {
	switch l.Kind {
	case LitNumber:
		return NumberConst(l.Text)
	case LitBool:
		return Const{Kind: ConstBool, Bool: l.Text == "true"}, nil
	case LitString:
		return Const{Kind: ConstString, Str: l.Text}, nil
	case LitTimestamp:
		return Const{Kind: ConstString, Str: l.Text, As: AsTimestamp}, nil
	case LitTimestampTZ:
		return Const{Kind: ConstString, Str: l.Text, As: AsTimestampTZ}, nil
	case LitDate:
		return Const{Kind: ConstString, Str: l.Text, As: AsDate}, nil
	case LitTime:
		return Const{Kind: ConstString, Str: l.Text, As: AsTime}, nil
	}
	return Const{}, fmt.Errorf("literal of unknown kind %q", l.Kind)
}

// bindPredicate converts c's literal to field's type.
func bindPredicate(field arrow.Field, c Condition) (predicate, error) {
	if c.Op == OpIsNull || c.Op == OpIsNotNull {
		return nullPred{notNull: c.Op == OpIsNotNull}, nil
	}
	k, err := c.Value.Const()
	if err == nil {
		var p predicate
		if p, err = constPredicate(field, c.Op, k); err == nil {
			return p, nil
		}
	}
	var ce conversionError
	if errors.As(err, &ce) {
		if (field.Type.ID() == arrow.STRING || field.Type.ID() == arrow.BINARY) && c.Value.Kind != LitString {
			return nil, fmt.Errorf("%s is %s: compare it with a 'string'", field.Name, field.Type)
		}
		return nil, literalError(c.Value, ce)
	}
	return nil, err
}

func literalError(lit Literal, want conversionError) error {
	return fmt.Errorf("cannot convert %s literal %q to %s", lit.Kind, lit.Text, want)
}

// constPredicate is x op k for the column x of field. It is a dispatcher
// on the column's type.
func constPredicate(field arrow.Field, op Op, k Const) (predicate, error) {
	switch dt := field.Type.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		if k.Kind == ConstDouble {
			return floatPred{op: op, v: k.Double}, nil // DuckDB: the column as a DOUBLE
		}
		r, err := k.IntegerRat(dt)
		if err != nil {
			return nil, err
		}
		return newIntPred(op, r), nil
	case *arrow.TimestampType:
		if dt.Unit != arrow.Microsecond {
			break
		}
		us, err := k.TimestampMicros(dt.TimeZone != "")
		if err != nil {
			return nil, err
		}
		return newIntPred(op, new(big.Rat).SetInt64(us)), nil
	case *arrow.Date32Type:
		r, err := k.DateDays()
		if err != nil {
			return nil, err
		}
		return newIntPred(op, r), nil
	case *arrow.Time64Type:
		us, err := k.TimeMicros()
		if err != nil {
			return nil, err
		}
		// Multiplier is a unit's length in nanoseconds.
		return newIntPred(op, big.NewRat(us*1000, int64(dt.Unit.Multiplier()))), nil
	case *arrow.Float32Type, *arrow.Float64Type:
		v, err := k.FloatValue(dt.(arrow.FixedWidthDataType).BitWidth())
		if err != nil {
			return nil, err
		}
		return floatPred{op: op, v: v}, nil
	case *arrow.Decimal128Type:
		if k.Kind == ConstDouble {
			return decimalDoublePred{op: op, v: k.Double, scale: dt.Scale}, nil
		}
		r, err := k.DecimalRat(dt.Scale)
		if err != nil {
			return nil, err
		}
		return newDecimalPred(op, r), nil
	case *arrow.StringType:
		v, err := k.TextValue()
		if err != nil {
			return nil, err
		}
		return bytesPred{op: op, v: []byte(v)}, nil
	case *arrow.BinaryType:
		v, err := k.BlobValue()
		if err != nil {
			return nil, err
		}
		return bytesPred{op: op, v: v}, nil
	case *arrow.BooleanType:
		v, err := k.BoolValue()
		if err != nil {
			return nil, err
		}
		return boolPred{op: op, v: v}, nil
	}
	return nil, fmt.Errorf("cannot filter on %s of type %s", field.Name, field.Type)
}

// holds reports whether a comparison whose operands compare as c (-1, 0,
// 1) meets op.
func holds(op Op, c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// nullPred is IS [NOT] NULL.
type nullPred struct{ notNull bool }

func (p nullPred) keep(arr arrow.Array, sel []bool) error {
	for i := range sel {
		if sel[i] && arr.IsNull(i) == p.notNull {
			sel[i] = false
		}
	}
	return nil
}

// intPred compares an integer-stored column (integers, timestamps, dates,
// times) with a literal made exact in that column's integer domain, or,
// when no integer equals the literal's effect, with a constant outcome.
type intPred struct {
	op Op
	v  int64
	// konst, when not 0, is the outcome for every non-null row: 1 true,
	// -1 false.
	konst int
}

// outOfRange is the constant outcome of x op v for every x of a type
// whose values are all below v (v > 0) or all above it.
func outOfRange(op Op, v *big.Int) int {
	if holds(op, -v.Sign()) {
		return 1
	}
	return -1
}

func newIntPred(op Op, r *big.Rat) intPred {
	op, v, konst := IntegerBound(op, r)
	switch {
	case konst != 0:
		return intPred{op: op, konst: konst}
	case !v.IsInt64():
		return intPred{op: op, konst: outOfRange(op, v)}
	}
	return intPred{op: op, v: v.Int64()}
}

func (p intPred) keep(arr arrow.Array, sel []bool) error {
	at, ok := intValues(arr)
	if !ok {
		return fmt.Errorf("changes(): filter: integer comparison over %s", arr.DataType())
	}
	if p.konst != 0 {
		keepWhere(arr, sel, func(int) bool { return p.konst > 0 })
		return nil
	}
	keepWhere(arr, sel, func(i int) bool { return holds(p.op, cmp.Compare(at(i), p.v)) })
	return nil
}

// intValues reads the values of an integer-stored array (integers,
// timestamps, dates, times) as int64.
func intValues(arr arrow.Array) (func(i int) int64, bool) {
	switch a := arr.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Int16:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Int32:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Int64:
		return a.Value, true
	case *array.Timestamp:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Date32:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	case *array.Time64:
		return func(i int) int64 { return int64(a.Value(i)) }, true
	}
	return nil, false
}

// keepWhere clears sel[i] for the selected rows of arr that are NULL, which
// never compare, or for which holds is false.
func keepWhere(arr arrow.Array, sel []bool, holds func(i int) bool) {
	nulls := arr.NullN() > 0
	for i := range sel {
		if sel[i] {
			sel[i] = !(nulls && arr.IsNull(i)) && holds(i)
		}
	}
}

// floatPred compares a column as DOUBLEs, in DuckDB's order: NaN above
// every number and equal to itself. It serves float columns, and integer
// columns compared with a DOUBLE literal.
type floatPred struct {
	op Op
	v  float64
}

func compareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

func (p floatPred) keep(arr arrow.Array, sel []bool) error {
	var at func(i int) float64
	switch a := arr.(type) {
	case *array.Float32:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Float64:
		at = a.Value
	default:
		ints, ok := intValues(arr)
		if !ok {
			return fmt.Errorf("changes(): filter: float comparison over %s", arr.DataType())
		}
		at = func(i int) float64 { return float64(ints(i)) }
	}
	keepWhere(arr, sel, func(i int) bool { return holds(p.op, compareFloat(at(i), p.v)) })
	return nil
}

// decimalPred compares unscaled decimal values, the literal rewritten as
// for integers.
type decimalPred struct {
	op    Op
	v     decimal128.Num
	konst int
}

// newDecimalPred compares unscaled values with r, the literal's unscaled
// value, rewritten as for integers.
func newDecimalPred(op Op, r *big.Rat) decimalPred {
	op, v, konst := IntegerBound(op, r)
	switch {
	case konst != 0:
		return decimalPred{op: op, konst: konst}
	case v.BitLen() > 127: // beyond 128 bits: no stored value is as large
		return decimalPred{op: op, konst: outOfRange(op, v)}
	}
	return decimalPred{op: op, v: decimal128.FromBigInt(v)}
}

func (p decimalPred) keep(arr arrow.Array, sel []bool) error {
	a, ok := arr.(*array.Decimal128)
	if !ok {
		return fmt.Errorf("changes(): filter: decimal comparison over %s", arr.DataType())
	}
	if p.konst != 0 {
		keepWhere(arr, sel, func(int) bool { return p.konst > 0 })
		return nil
	}
	keepWhere(arr, sel, func(i int) bool { return holds(p.op, a.Value(i).Cmp(p.v)) })
	return nil
}

// decimalDoublePred compares a decimal column with a DOUBLE literal as
// DuckDB does: the value converted to DOUBLE, the unscaled integer
// divided by 10^scale.
type decimalDoublePred struct {
	op    Op
	v     float64
	scale int32
}

func (p decimalDoublePred) keep(arr arrow.Array, sel []bool) error {
	a, ok := arr.(*array.Decimal128)
	if !ok {
		return fmt.Errorf("changes(): filter: decimal comparison over %s", arr.DataType())
	}
	div := math.Pow10(int(p.scale))
	keepWhere(arr, sel, func(i int) bool { return holds(p.op, compareFloat(decimalDouble(a.Value(i))/div, p.v)) })
	return nil
}

// decimalDouble is the unscaled value as a DOUBLE: exact up to 2^53, as
// DuckDB converts an integer beyond.
func decimalDouble(v decimal128.Num) float64 {
	if v.FitsInPrecision(18) {
		return float64(int64(v.LowBits()))
	}
	f, _ := new(big.Float).SetInt(v.BigInt()).Float64()
	return f
}

// bytesPred compares strings and blobs bytewise, DuckDB's default
// (binary) collation.
type bytesPred struct {
	op Op
	v  []byte
}

func (p bytesPred) keep(arr arrow.Array, sel []bool) error {
	switch a := arr.(type) {
	case *array.String:
		v := string(p.v)
		keepWhere(arr, sel, func(i int) bool { return holds(p.op, strings.Compare(a.Value(i), v)) })
	case *array.Binary:
		keepWhere(arr, sel, func(i int) bool { return holds(p.op, bytes.Compare(a.Value(i), p.v)) })
	default:
		return fmt.Errorf("changes(): filter: string comparison over %s", arr.DataType())
	}
	return nil
}

// boolPred compares booleans, false before true.
type boolPred struct {
	op Op
	v  bool
}

func (p boolPred) keep(arr arrow.Array, sel []bool) error {
	a, ok := arr.(*array.Boolean)
	if !ok {
		return fmt.Errorf("changes(): filter: boolean comparison over %s", arr.DataType())
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	keepWhere(arr, sel, func(i int) bool { return holds(p.op, cmp.Compare(b2i(a.Value(i)), b2i(p.v))) })
	return nil
}
