package tables

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/scan"
)

// Random columns for the pruning tests, and the reference evaluation of a
// filter on a row.

func fmtValue(v any) string {
	if b, ok := v.([]byte); ok {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%#v", v)
}

// generated is a random column and a way to draw filter values for it.
type generated struct {
	arr arrow.Array
	// value returns a Go value of the column's type: one of the column's
	// values, one next to it, or an extreme.
	value func(rng *rand.Rand, arr arrow.Array) any
}

func randomColumn(rng *rand.Rand, mem memory.Allocator) generated {
	n := 1 + rng.IntN(40)
	nullRate := []float64{0, 0, 0.1, 0.5, 1}[rng.IntN(5)]
	null := func() bool { return rng.Float64() < nullRate }
	switch rng.IntN(8) {
	case 0:
		return intColumn(rng, mem, n, null)
	case 1:
		return uintColumn(rng, mem, n, null)
	case 2:
		return floatColumn(rng, mem, n, null)
	case 3:
		return decimalColumn(rng, mem, n, null)
	case 4, 5:
		return stringColumn(rng, mem, n, null)
	case 6:
		return boolColumn(rng, mem, n, null)
	}
	return timestampColumn(rng, mem, n, null)
}

func intColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	for range n {
		if null() {
			b.AppendNull()
		} else {
			b.Append(int32(rng.IntN(200) - 100))
		}
	}
	return generated{b.NewArray(), func(rng *rand.Rand, arr arrow.Array) any {
		a := arr.(*array.Int32)
		switch i := rng.IntN(arr.Len() + 2); {
		case i >= arr.Len():
			return []int32{math.MinInt32, math.MaxInt32}[i-arr.Len()]
		default:
			return a.Value(i) + int32(rng.IntN(3)-1)
		}
	}}
}

func uintColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	b := array.NewUint64Builder(mem)
	defer b.Release()
	for range n {
		if null() {
			b.AppendNull()
		} else {
			b.Append(math.MaxUint64 - uint64(rng.IntN(100)))
		}
	}
	return generated{b.NewArray(), func(rng *rand.Rand, arr arrow.Array) any {
		v := arr.(*array.Uint64).Value(rng.IntN(arr.Len()))
		if rng.IntN(2) == 0 && v > 0 {
			return v - 1
		}
		return v
	}}
}

func floatColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	special := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1)}
	for range n {
		switch {
		case null():
			b.AppendNull()
		case rng.IntN(6) == 0:
			b.Append(special[rng.IntN(len(special))])
		default:
			b.Append(float64(rng.IntN(20)-10) / 4)
		}
	}
	return generated{b.NewArray(), func(rng *rand.Rand, arr arrow.Array) any {
		v := arr.(*array.Float64).Value(rng.IntN(arr.Len()))
		switch rng.IntN(4) {
		case 0:
			return math.Nextafter(v, math.Inf(1))
		case 1:
			return special[rng.IntN(len(special))]
		}
		return v
	}}
}

func decimalColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 4})
	defer b.Release()
	for range n {
		if null() {
			b.AppendNull()
		} else {
			v := decimal128.FromI64(rng.Int64N(2000) - 1000)
			if rng.IntN(3) == 0 {
				v = v.Mul(decimal128.FromU64(math.MaxUint64)) // beyond 64 bits
			}
			b.Append(v)
		}
	}
	return generated{b.NewArray(), func(rng *rand.Rand, arr arrow.Array) any {
		v := arr.(*array.Decimal128).Value(rng.IntN(arr.Len()))
		return v.Add(decimal128.FromI64(int64(rng.IntN(3) - 1)))
	}}
}

func stringColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	long := rng.IntN(2) == 0
	pieces := []string{"", "a", "ab", "b", "\xff", "\xff\xff", "z", "\x00"}
	word := func() string {
		var s strings.Builder
		k := rng.IntN(4)
		if long {
			k = 20 + rng.IntN(30)
		}
		for range k {
			s.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return s.String()
	}
	binary := rng.IntN(3) == 0
	var b array.Builder
	if binary {
		b = array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	} else {
		b = array.NewStringBuilder(mem)
	}
	defer b.Release()
	for range n {
		switch {
		case null():
			b.AppendNull()
		case binary:
			b.(*array.BinaryBuilder).Append([]byte(word()))
		default:
			b.(*array.StringBuilder).Append(word())
		}
	}
	value := func(rng *rand.Rand, arr arrow.Array) any {
		i := rng.IntN(arr.Len())
		var v string
		if binary {
			v = string(arr.(*array.Binary).Value(i))
		} else {
			v = arr.(*array.String).Value(i)
		}
		switch rng.IntN(5) {
		case 0:
			v = v[:rng.IntN(len(v)+1)] // a prefix, often the 32-byte one
		case 1:
			v += pieces[rng.IntN(len(pieces))]
		case 2:
			v = word()
		}
		if binary {
			return []byte(v)
		}
		return v
	}
	return generated{b.NewArray(), value}
}

func boolColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	bias := rng.Float64()
	for range n {
		if null() {
			b.AppendNull()
		} else {
			b.Append(rng.Float64() < bias)
		}
	}
	return generated{b.NewArray(), func(rng *rand.Rand, _ arrow.Array) any { return rng.IntN(2) == 0 }}
}

func timestampColumn(rng *rand.Rand, mem memory.Allocator, n int, null func() bool) generated {
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"})
	defer b.Release()
	for range n {
		if null() {
			b.AppendNull()
		} else {
			b.Append(arrow.Timestamp(1_700_000_000_000_000_000 + rng.Int64N(1_000_000)))
		}
	}
	return generated{b.NewArray(), func(rng *rand.Rand, arr arrow.Array) any {
		return arr.(*array.Timestamp).Value(rng.IntN(arr.Len())) + arrow.Timestamp(rng.IntN(3)-1)
	}}
}

// satisfies is the reference: does row i of arr satisfy f, as SQL (and
// DuckDB: NaN equals NaN and is above every number) evaluates it?
func satisfies(arr arrow.Array, i int, f scan.Filter) bool {
	switch f.Op {
	case "IS NULL":
		return arr.IsNull(i)
	case "IS NOT NULL":
		return arr.IsValid(i)
	}
	if arr.IsNull(i) {
		return false
	}
	c := compareValue(arr, i, f.Value)
	switch f.Op {
	case "=":
		return c == 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	panic("operator " + f.Op)
}

// compareValue compares row i of arr with v, a value of its Go type.
func compareValue(arr arrow.Array, i int, v any) int {
	switch a := arr.(type) {
	case *array.Int8:
		return cmpOrdered(a.Value(i), v.(int8))
	case *array.Int16:
		return cmpOrdered(a.Value(i), v.(int16))
	case *array.Int32:
		return cmpOrdered(a.Value(i), v.(int32))
	case *array.Int64:
		return cmpOrdered(a.Value(i), v.(int64))
	case *array.Uint64:
		return cmpOrdered(a.Value(i), v.(uint64))
	case *array.Float32:
		return cmpFloat(float64(a.Value(i)), float64(v.(float32)))
	case *array.Float64:
		return cmpFloat(a.Value(i), v.(float64))
	case *array.Decimal128:
		return a.Value(i).Cmp(v.(decimal128.Num))
	case *array.String:
		return strings.Compare(a.Value(i), v.(string))
	case *array.Binary:
		return bytes.Compare(a.Value(i), v.([]byte))
	case *array.Boolean:
		b2i := func(b bool) int {
			if b {
				return 1
			}
			return 0
		}
		return b2i(a.Value(i)) - b2i(v.(bool))
	case *array.Timestamp:
		return cmpOrdered(a.Value(i), v.(arrow.Timestamp))
	case *array.Date32:
		return cmpOrdered(a.Value(i), v.(arrow.Date32))
	case *array.Time64:
		return cmpOrdered(a.Value(i), v.(arrow.Time64))
	}
	panic(fmt.Sprintf("compareValue: %T", arr))
}

func cmpOrdered[T int8 | int16 | int32 | int64 | uint64 | arrow.Timestamp | arrow.Date32 | arrow.Time64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders floats as DuckDB does: NaN equals NaN and is greater
// than everything else; -0 equals +0.
func cmpFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
