package merge

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/internal/rowenc"
)

// Func is an aggregation function of the aggregation merge engine.
type Func string

// The aggregation functions (fields.<col>.agg). For each, a NULL input
// leaves the value as it is, except for last_value, which takes it.
const (
	Sum              Func = "sum"   // numbers; overflow is an error
	Min              Func = "min"   // ordered types
	Max              Func = "max"   // ordered types
	Count            Func = "count" // INTEGER, BIGINT: the rows that carried a non-null value
	LastValue        Func = "last_value"
	LastNonNullValue Func = "last_non_null_value" // the default
	FirstValue       Func = "first_value"         // the value the key was inserted with
	BoolAnd          Func = "bool_and"
	BoolOr           Func = "bool_or"
	ListAgg          Func = "listagg" // VARCHAR, joined with the column's Delimiter
)

func checkAggs(cols []Column) error {
	for _, c := range cols {
		if c.Key && c.Agg != "" {
			return fmt.Errorf("%w: column %q is a primary key column; it takes no aggregation function", ErrInvalid, c.Name)
		}
		if err := checkAggType(c); err != nil {
			return err
		}
	}
	return nil
}

func checkAggType(c Column) error {
	id := c.Type.ID()
	ok := true
	switch c.Agg {
	case Sum:
		ok = isInt(id) || id == arrow.FLOAT32 || id == arrow.FLOAT64 || id == arrow.DECIMAL128
	case Min, Max:
		ok = rowenc.Comparable(c.Type) && id != arrow.BOOL
	case Count:
		ok = id == arrow.INT32 || id == arrow.INT64
	case BoolAnd, BoolOr:
		ok = id == arrow.BOOL
	case ListAgg:
		ok = id == arrow.STRING
	case "", LastValue, LastNonNullValue, FirstValue:
	default:
		return fmt.Errorf("%w: column %q: unknown aggregation function %q", ErrInvalid, c.Name, c.Agg)
	}
	if !ok {
		return fmt.Errorf("%w: column %q: %s cannot aggregate %s", ErrInvalid, c.Name, c.Agg, c.Type)
	}
	return nil
}

func isInt(id arrow.Type) bool {
	return id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64
}

// initAgg is a column's value for a new key, inserted with in.
func initAgg(c Column, in rowenc.Value) rowenc.Value {
	if c.Agg == Count {
		n := int64(0)
		if !in.Null {
			n = 1
		}
		return rowenc.Value{Raw: rowenc.FromInt(n, intWidth(c.Type))}
	}
	return in
}

// aggregate folds in into old column by column; columns not carried keep
// their value.
func (e *Engine) aggregate(old, in []rowenc.Value, present []bool) ([]rowenc.Value, bool, error) {
	out := make([]rowenc.Value, len(old))
	for i, c := range e.cols {
		if !present[i] || c.Key {
			out[i] = old[i]
			continue
		}
		v, err := agg(c, old[i], in[i])
		if err != nil {
			return nil, false, err
		}
		out[i] = v
	}
	return out, true, nil
}

// agg is one column's aggregate of its value old and an incoming value in.
func agg(c Column, old, in rowenc.Value) (rowenc.Value, error) {
	switch c.Agg {
	case LastValue:
		return in, nil
	case FirstValue:
		return old, nil
	case Count:
		n := int64(0)
		if !old.Null {
			n = rowenc.Int(old.Raw)
		}
		if !in.Null {
			if n == math.MaxInt64 || (c.Type.ID() == arrow.INT32 && n == math.MaxInt32) {
				return rowenc.Value{}, overflow(c)
			}
			n++
		}
		return rowenc.Value{Raw: rowenc.FromInt(n, intWidth(c.Type))}, nil
	}
	switch {
	case in.Null:
		return old, nil
	case old.Null:
		return in, nil
	}
	switch c.Agg {
	case Sum:
		return sum(c, old.Raw, in.Raw)
	case Min:
		if rowenc.Compare(c.Type, in.Raw, old.Raw) < 0 {
			return in, nil
		}
		return old, nil
	case Max:
		if rowenc.Compare(c.Type, in.Raw, old.Raw) > 0 {
			return in, nil
		}
		return old, nil
	case BoolAnd:
		return rowenc.Value{Raw: rowenc.FromBool(rowenc.Bool(old.Raw) && rowenc.Bool(in.Raw))}, nil
	case BoolOr:
		return rowenc.Value{Raw: rowenc.FromBool(rowenc.Bool(old.Raw) || rowenc.Bool(in.Raw))}, nil
	case ListAgg:
		d := c.Delimiter
		if d == "" {
			d = ","
		}
		joined := make([]byte, 0, len(old.Raw)+len(d)+len(in.Raw))
		joined = append(append(append(joined, old.Raw...), d...), in.Raw...)
		return rowenc.Value{Raw: joined}, nil
	}
	return in, nil // last_non_null_value
}

func overflow(c Column) error {
	return fmt.Errorf("%w: %s of column %q overflows its type %s", ErrInvalid, c.Agg, c.Name, c.Type)
}

func intWidth(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.INT8:
		return 1
	case arrow.INT16:
		return 2
	case arrow.INT32:
		return 4
	}
	return 8
}

func sum(c Column, a, b []byte) (rowenc.Value, error) {
	switch id := c.Type.ID(); {
	case id == arrow.FLOAT32 || id == arrow.FLOAT64:
		return rowenc.Value{Raw: rowenc.FromFloat(rowenc.Float(a)+rowenc.Float(b), len(a))}, nil
	case id == arrow.DECIMAL128:
		x, y := rowenc.Decimal(a), rowenc.Decimal(b)
		s := x.Add(y)
		if (x.Sign() == y.Sign() && s.Sign() != x.Sign() && x.Sign() != 0) ||
			!s.FitsInPrecision(c.Type.(*arrow.Decimal128Type).Precision) {
			return rowenc.Value{}, overflow(c)
		}
		return rowenc.Value{Raw: rowenc.FromDecimal(s)}, nil
	}
	x, y := rowenc.Int(a), rowenc.Int(b)
	w := intWidth(c.Type)
	s := x + y
	if (x > 0 && y > 0 && s < 0) || (x < 0 && y < 0 && s >= 0) {
		return rowenc.Value{}, overflow(c)
	}
	if w < 8 {
		lim := int64(1) << (8*w - 1)
		if s < -lim || s >= lim {
			return rowenc.Value{}, overflow(c)
		}
	}
	return rowenc.Value{Raw: rowenc.FromInt(s, w)}, nil
}
