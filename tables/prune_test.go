package tables

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/scan"
)

// mayMatchStats is the pure decision: may a column with statistics st, in
// a batch of rows rows, hold a value that satisfies f?
func mayMatchStats(t *testing.T, st columnarlog.ColumnStats, rows int32, typ arrow.DataType, f scan.Filter) bool {
	t.Helper()
	vf, err := validateFilter(arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ}}, nil), f)
	if err != nil {
		t.Fatalf("filter %v: %v", f, err)
	}
	return vf.mayMatch(&st, rows)
}

func TestMayMatch(t *testing.T) {
	const (
		minmax = columnarlog.StatsHasMinMax
		nan    = columnarlog.StatsHasNaN
	)
	ints := columnarlog.ColumnStats{Kind: columnarlog.StatsInt64, Flags: minmax, MinInt: 10, MaxInt: 20}
	intsNulls := ints
	intsNulls.NullCount = 3
	allNull := columnarlog.ColumnStats{Kind: columnarlog.StatsInt64, NullCount: 8}
	floats := columnarlog.ColumnStats{Kind: columnarlog.StatsFloat64, Flags: minmax, MinFloat: -1, MaxFloat: 2.5}
	floatsNaN := floats
	floatsNaN.Flags |= nan
	allNaN := columnarlog.ColumnStats{Kind: columnarlog.StatsFloat64, Flags: nan}
	negZero := columnarlog.ColumnStats{Kind: columnarlog.StatsFloat64, Flags: minmax, MinFloat: math.Copysign(0, -1), MaxFloat: math.Copysign(0, -1)}
	f32 := columnarlog.ColumnStats{Kind: columnarlog.StatsFloat64, Flags: minmax, MinFloat: float64(float32(0.1)), MaxFloat: float64(float32(0.3))}
	uints := columnarlog.ColumnStats{Kind: columnarlog.StatsUint64, Flags: minmax, MinUint: 5, MaxUint: math.MaxUint64}
	decs := columnarlog.ColumnStats{Kind: columnarlog.StatsDecimal128, Flags: minmax,
		MinDec: columnarlog.Int128{Hi: -1, Lo: math.MaxUint64 - 149}, MaxDec: columnarlog.Int128{Lo: 250}} // -1.50 .. 2.50
	strs := columnarlog.ColumnStats{Kind: columnarlog.StatsBytes, Flags: minmax, MinBytes: []byte("apple"), MaxBytes: []byte("pear")}
	cut := columnarlog.ColumnStats{Kind: columnarlog.StatsBytes, Flags: minmax | columnarlog.StatsMinTruncated | columnarlog.StatsMaxExclusive,
		MinBytes: []byte("abc"), MaxBytes: []byte("abd")} // values in ("abc", "abd"), e.g. "abcz…", "abc\xff…"
	unbounded := columnarlog.ColumnStats{Kind: columnarlog.StatsBytes, Flags: minmax | columnarlog.StatsMaxUnbounded, MinBytes: []byte("m")}
	falses := columnarlog.ColumnStats{Kind: columnarlog.StatsBool, Flags: minmax, MinInt: 0, MaxInt: 0}
	none := columnarlog.ColumnStats{Kind: columnarlog.StatsNone}
	ts := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	tsStats := columnarlog.ColumnStats{Kind: columnarlog.StatsInt64, Flags: minmax, MinInt: 1_000, MaxInt: 2_000}
	dec := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	i64, f64, str := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String

	for _, tc := range []struct {
		name string
		st   columnarlog.ColumnStats
		typ  arrow.DataType
		op   string
		v    any
		want bool
	}{
		{"int = below", ints, i64, "=", int64(9), false},
		{"int = min", ints, i64, "=", int64(10), true},
		{"int = inside", ints, i64, "=", int64(15), true},
		{"int = max", ints, i64, "=", int64(20), true},
		{"int = above", ints, i64, "=", int64(21), false},
		{"int < min", ints, i64, "<", int64(10), false},
		{"int < min+1", ints, i64, "<", int64(11), true},
		{"int <= min", ints, i64, "<=", int64(10), true},
		{"int <= min-1", ints, i64, "<=", int64(9), false},
		{"int > max", ints, i64, ">", int64(20), false},
		{"int > max-1", ints, i64, ">", int64(19), true},
		{"int >= max", ints, i64, ">=", int64(20), true},
		{"int >= max+1", ints, i64, ">=", int64(21), false},
		{"int is null, none", ints, i64, "IS NULL", nil, false},
		{"int is null, some", intsNulls, i64, "IS NULL", nil, true},
		{"int is not null", intsNulls, i64, "IS NOT NULL", nil, true},
		{"all null =", allNull, i64, "=", int64(1), false},
		{"all null >", allNull, i64, ">", int64(math.MinInt64), false},
		{"all null is null", allNull, i64, "IS NULL", nil, true},
		{"all null is not null", allNull, i64, "IS NOT NULL", nil, false},

		{"float = inside", floats, f64, "=", 0.5, true},
		{"float > max", floats, f64, ">", 2.5, false},
		{"float > max, NaN", floatsNaN, f64, ">", 2.5, true},
		{"float >= above, NaN", floatsNaN, f64, ">=", 1e300, true},
		{"float < min, NaN", floatsNaN, f64, "<", -1.0, false},
		{"float = above, NaN", floatsNaN, f64, "=", 3.0, false},
		{"float = NaN value", floats, f64, "=", math.NaN(), true},
		{"all NaN >", allNaN, f64, ">", 0.0, true},
		{"all NaN <", allNaN, f64, "<", 0.0, false},
		{"all NaN =", allNaN, f64, "=", 0.0, false},
		{"-0 = +0", negZero, f64, "=", 0.0, true},
		{"-0 < +0", negZero, f64, "<", 0.0, false},
		{"-0 >= +0", negZero, f64, ">=", 0.0, true},
		{"float32 = its min", f32, arrow.PrimitiveTypes.Float32, "=", float32(0.1), true},
		{"float32 < its min", f32, arrow.PrimitiveTypes.Float32, "<", float32(0.1), false},
		{"float32 > its max", f32, arrow.PrimitiveTypes.Float32, ">", float32(0.3), false},

		{"uint > huge", uints, arrow.PrimitiveTypes.Uint64, ">", uint64(math.MaxUint64 - 1), true},
		{"uint < min", uints, arrow.PrimitiveTypes.Uint64, "<", uint64(5), false},

		{"decimal = min", decs, dec, "=", decimal128.FromI64(-150), true},
		{"decimal < min", decs, dec, "<", decimal128.FromI64(-150), false},
		{"decimal > max", decs, dec, ">", decimal128.FromI64(250), false},
		{"decimal >= negative", decs, dec, ">=", decimal128.FromI64(-151), true},
		{"decimal <= -2", decs, dec, "<=", decimal128.FromI64(-200), false},

		{"string = inside", strs, str, "=", "banana", true},
		{"string = below", strs, str, "=", "aardvark", false},
		{"string = above", strs, str, "=", "zebra", false},
		{"string = max", strs, str, "=", "pear", true},
		{"string > max", strs, str, ">", "pear", false},
		{"string >= max", strs, str, ">=", "pear", true},
		{"string > prefix of max", strs, str, ">", "pea", true},
		{"string < min", strs, str, "<", "apple", false},
		{"string < longer than min", strs, str, "<", "apple!", true},
		{"cut min: = prefix", cut, str, "=", "abc", true},
		{"cut min: < prefix", cut, str, "<", "abc", false},
		{"cut min: <= below", cut, str, "<=", "abb\xff", false},
		{"cut max: >= bound", cut, str, ">=", "abd", false},
		{"cut max: = bound", cut, str, "=", "abd", false},
		{"cut max: > below bound", cut, str, ">", "abc\xff\xff", true},
		{"cut max: = below bound", cut, str, "=", "abcz", true},
		{"unbounded max", unbounded, str, ">", "\xff\xff\xff", true},
		{"unbounded max, min", unbounded, str, "<", "m", false},
		{"binary", strs, arrow.BinaryTypes.Binary, "=", []byte("zebra"), false},

		{"bool = true, all false", falses, arrow.FixedWidthTypes.Boolean, "=", true, false},
		{"bool = false, all false", falses, arrow.FixedWidthTypes.Boolean, "=", false, true},
		{"bool > false, all false", falses, arrow.FixedWidthTypes.Boolean, ">", false, false},

		{"ts in unit", tsStats, ts, "<", arrow.Timestamp(1_000), false},
		{"ts in unit, inside", tsStats, ts, "=", arrow.Timestamp(1_500), true},
		{"date", ints, arrow.FixedWidthTypes.Date32, ">", arrow.Date32(20), false},
		{"time", ints, arrow.FixedWidthTypes.Time64us, "<=", arrow.Time64(9), false},

		{"no stats: =", none, i64, "=", int64(1), true},
		{"no stats: is null", none, i64, "IS NULL", nil, true},
		{"no stats: is not null", none, i64, "IS NOT NULL", nil, true},
		{"stats of another kind", strs, i64, "=", int64(1), true},
	} {
		got := mayMatchStats(t, tc.st, 8, tc.typ, scan.Filter{Op: tc.op, Value: tc.v})
		if got != tc.want {
			t.Errorf("%s: %s %v on %+v: may match %v, want %v", tc.name, tc.op, tc.v, tc.st, got, tc.want)
		}
	}
}

func TestValidateFilterRefuses(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}, nil)
	for _, f := range []scan.Filter{
		{Column: 2, Op: "="},
		{Column: -1, Op: "IS NULL"},
		{Column: 0, Op: "<>", Value: int64(1)},
		{Column: 0, Op: "=", Value: int32(1)},
		{Column: 0, Op: "=", Value: nil},
		{Column: 0, Op: "IS NULL", Value: int64(1)},
		{Column: 1, Op: "=", Value: int64(1)},
	} {
		if _, err := validateFilter(schema, f); err == nil {
			t.Errorf("%+v: accepted", f)
		}
	}
	if _, err := validateFilter(schema, scan.Filter{Column: 1, Op: "IS NOT NULL"}); err != nil {
		t.Errorf("IS NOT NULL on a list column: %v", err)
	}
}

// Statistics computed from arrays, through their encoding, never rule out
// a batch that holds a matching row: random columns of every supported
// type (nulls, NaNs, signed zeros, long strings, 0xFF bytes, slices), and
// random filters, mostly at values from the data and next to them.
func TestPruningNeverDropsAMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	pruned, checked := 0, 0
	for round := range 400 {
		gen := randomColumn(rng, mem)
		arr := gen.arr
		if rng.IntN(4) == 0 && arr.Len() > 2 {
			// A slice: offsets and validity not starting at zero.
			lo := rng.IntN(arr.Len() / 2)
			s := array.NewSlice(arr, int64(lo), int64(arr.Len()))
			arr.Release()
			arr = s
		}
		enc, err := columnarlog.EncodeStats([]columnarlog.ColumnStats{columnStats(arr)})
		if err != nil {
			t.Fatal(err)
		}
		dec, err := columnarlog.DecodeStats(enc)
		if err != nil {
			t.Fatal(err)
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: arr.DataType(), Nullable: true}}, nil)
		for range 40 {
			f := scan.Filter{Op: []string{"=", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL"}[rng.IntN(7)]}
			if f.Op[0] != 'I' {
				f.Value = gen.value(rng, arr)
			}
			vf, err := validateFilter(schema, f)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			checked++
			if vf.mayMatch(&dec[0], int32(arr.Len())) {
				continue
			}
			pruned++
			for i := range arr.Len() {
				if satisfies(arr, i, f) {
					t.Fatalf("round %d: %s %s %s pruned, but row %d (%s) matches; stats %+v",
						round, arr.DataType(), f.Op, fmtValue(f.Value), i, arr.ValueStr(i), dec[0])
				}
			}
		}
		arr.Release()
	}
	if pruned < checked/5 {
		t.Errorf("only %d of %d random filters pruned: the test does not exercise pruning", pruned, checked)
	}
}

// The statistics of arrays: bounds, nulls, NaNs, truncation.
func TestColumnStats(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	long := strings.Repeat("x", 40)
	for _, tc := range []struct {
		name string
		arr  func() arrow.Array
		want columnarlog.ColumnStats
	}{
		{"ints with nulls", func() arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{5, 0, -7, 9}, []bool{true, false, true, true})
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsInt64, Flags: columnarlog.StatsHasMinMax, NullCount: 1, MinInt: -7, MaxInt: 9}},
		{"floats with NaN", func() arrow.Array {
			b := array.NewFloat32Builder(mem)
			defer b.Release()
			b.AppendValues([]float32{float32(math.NaN()), 2, -0.5}, nil)
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsFloat64, Flags: columnarlog.StatsHasMinMax | columnarlog.StatsHasNaN, MinFloat: -0.5, MaxFloat: 2}},
		{"all null", func() arrow.Array {
			b := array.NewStringBuilder(mem)
			defer b.Release()
			b.AppendNulls(3)
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsBytes, NullCount: 3}},
		{"long strings", func() arrow.Array {
			b := array.NewStringBuilder(mem)
			defer b.Release()
			b.AppendValues([]string{long + "a", "b" + long, "y" + strings.Repeat("x", 30) + "\xff\xff"}, nil)
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsBytes, NullCount: 0,
			Flags:    columnarlog.StatsHasMinMax | columnarlog.StatsMinTruncated | columnarlog.StatsMaxExclusive,
			MinBytes: []byte("b" + long[:31]), MaxBytes: []byte("y" + strings.Repeat("x", 29) + "y")}},
		{"max prefix all 0xFF", func() arrow.Array {
			b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			defer b.Release()
			b.AppendValues([][]byte{bytes.Repeat([]byte{0xff}, 33), {}}, nil)
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsBytes,
			Flags:    columnarlog.StatsHasMinMax | columnarlog.StatsMaxUnbounded,
			MinBytes: []byte{}}},
		{"booleans", func() arrow.Array {
			b := array.NewBooleanBuilder(mem)
			defer b.Release()
			b.AppendValues([]bool{true, false, true}, []bool{true, false, true})
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsBool, Flags: columnarlog.StatsHasMinMax, NullCount: 1, MinInt: 1, MaxInt: 1}},
		{"list: none", func() arrow.Array {
			b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
			defer b.Release()
			b.AppendNull()
			return b.NewArray()
		}, columnarlog.ColumnStats{Kind: columnarlog.StatsNone}},
	} {
		arr := tc.arr()
		got := columnStats(arr)
		arr.Release()
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// The bounds of string columns are exact below MaxStatsBytes, whatever the
// values share: words, lengths, zero bytes, 0xFF bytes, the end of the
// buffer.
func TestBytesStatsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0, 1, 'a', 'b', 0xfe, 0xff}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for range 3000 {
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		prefix := bytes.Repeat([]byte{'p'}, rng.IntN(20))
		var lo, hi []byte
		found := false
		n := 1 + rng.IntN(30)
		for range n {
			v := append([]byte(nil), prefix[:rng.IntN(len(prefix)+1)]...)
			for range rng.IntN(12) {
				v = append(v, alphabet[rng.IntN(len(alphabet))])
			}
			v = v[:min(len(v), columnarlog.MaxStatsBytes)]
			if rng.IntN(8) == 0 {
				b.AppendNull()
				continue
			}
			b.Append(v)
			if !found || bytes.Compare(v, lo) < 0 {
				lo = v
			}
			if !found || bytes.Compare(v, hi) > 0 {
				hi = v
			}
			found = true
		}
		arr := b.NewArray()
		b.Release()
		st := columnStats(arr)
		arr.Release()
		if !found {
			if st.Has(columnarlog.StatsHasMinMax) {
				t.Fatalf("all null, stats %+v", st)
			}
			continue
		}
		if !bytes.Equal(st.MinBytes, lo) || !bytes.Equal(st.MaxBytes, hi) || st.Flags != columnarlog.StatsHasMinMax {
			t.Fatalf("bounds %q, %q (flags %b); want %q, %q", st.MinBytes, st.MaxBytes, st.Flags, lo, hi)
		}
	}
}

// A changelog read asks another node for a remote bucket only when the
// filters on _bucket accept it; filters on other columns never rule a
// bucket out.
func TestPrunerBucketMayMatch(t *testing.T) {
	def := &catalog.Table{Name: "t", Columns: []catalog.Column{{Name: "k"}}} // the pruner reads its column count
	schema := changelogSchema(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil))
	bucketCol := len(def.Columns) + 1
	var none *pruner
	if !none.bucketMayMatch(3) {
		t.Fatal("no filters ruled a bucket out")
	}
	for _, tc := range []struct {
		f    scan.Filter
		want []bool // buckets 0, 1, 2
	}{
		{scan.Filter{Column: bucketCol, Op: "=", Value: int32(1)}, []bool{false, true, false}},
		{scan.Filter{Column: bucketCol, Op: "<", Value: int32(1)}, []bool{true, false, false}},
		{scan.Filter{Column: bucketCol, Op: ">=", Value: int32(1)}, []bool{false, true, true}},
		{scan.Filter{Column: bucketCol, Op: "IS NOT NULL"}, []bool{true, true, true}},
		{scan.Filter{Column: bucketCol, Op: "IS NULL"}, []bool{false, false, false}},
		{scan.Filter{Column: 0, Op: "=", Value: int64(1)}, []bool{true, true, true}},
	} {
		p, err := newPruner(def, schema, []scan.Filter{tc.f})
		if err != nil {
			t.Fatal(err)
		}
		for b, want := range tc.want {
			if got := p.bucketMayMatch(b); got != want {
				t.Errorf("%+v, bucket %d: %v, want %v", tc.f, b, got, want)
			}
		}
	}
}
