package tables

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestFilterRecord checks filterRecord against a model (row j of the result
// is the j-th kept row) over columns of every path (fixed widths, strings, binaries,
// booleans through the kernel), with and without nulls, sliced and not.
func TestFilterRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(7, 7))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 30, Scale: 2}, Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}, // through Arrow's kernel
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "struct", Type: arrow.StructOf(arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}, nil)
	for _, n := range []int{1, 63, 64, 65, 200, 1000} {
		for _, nulls := range []bool{false, true} {
			for _, density := range []float64{0, 0.01, 0.5, 0.99, 1} {
				t.Run(fmt.Sprintf("n%d/nulls%v/%g", n, nulls, density), func(t *testing.T) {
					full := randomRecord(mem, schema, r, n+3, nulls)
					defer full.Release()
					rec := full.NewSlice(2, int64(n+2)) // an offset into the buffers
					defer rec.Release()
					keep := make(keepBits, (n+63)/64)
					for i := range n {
						if r.Float64() < density {
							keep[i/64] |= 1 << (i % 64)
						}
					}
					kept := keep.count()
					if kept == 0 {
						return
					}
					got, err := filterRecord(context.Background(), rec, keep, kept, mem)
					if err != nil {
						t.Fatal(err)
					}
					defer got.Release()
					// The model: row j of the result is the j-th kept row.
					if got.NumRows() != int64(kept) {
						t.Fatalf("%d rows, want %d", got.NumRows(), kept)
					}
					j := 0
					keep.each(func(i int) {
						for c := range int(rec.NumCols()) {
							if !array.SliceEqual(got.Column(c), int64(j), int64(j+1), rec.Column(c), int64(i), int64(i+1)) {
								t.Fatalf("column %s row %d: %v, want row %d: %v", schema.Field(c).Name, j, got.Column(c).ValueStr(j), i, rec.Column(c).ValueStr(i))
							}
						}
						j++
					})
				})
			}
		}
	}
}

func randomRecord(mem memory.Allocator, schema *arrow.Schema, r *rand.Rand, n int, nulls bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for range n {
		for i, f := range b.Fields() {
			if nulls && r.IntN(5) == 0 {
				f.AppendNull()
				continue
			}
			switch f := f.(type) {
			case *array.Int64Builder:
				f.Append(r.Int64())
			case *array.Float64Builder:
				f.Append(r.Float64())
			case *array.Int32Builder:
				f.Append(r.Int32())
			case *array.Int16Builder:
				f.Append(int16(r.IntN(1 << 15)))
			case *array.TimestampBuilder:
				f.Append(arrow.Timestamp(r.Int64()))
			case *array.StringBuilder:
				f.Append(fmt.Sprintf("v%d-%d", i, r.IntN(100000)))
			case *array.BinaryBuilder:
				f.Append(make([]byte, r.IntN(5)))
			case *array.BooleanBuilder:
				f.Append(r.IntN(2) == 0)
			case *array.Decimal128Builder:
				f.Append(decimal128.FromI64(r.Int64()))
			case *array.ListBuilder:
				f.Append(true)
				for range r.IntN(3) {
					f.ValueBuilder().(*array.Int64Builder).Append(r.Int64())
				}
			case *array.MapBuilder:
				f.Append(true)
				for k := range r.IntN(3) {
					f.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", k))
					f.ItemBuilder().(*array.Int32Builder).Append(r.Int32())
				}
			case *array.StructBuilder:
				f.Append(true)
				f.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("s%d", r.IntN(10)))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestLiveSetBits checks bits against has over ranges that start and end
// inside words and cross chunks.
func TestLiveSetBits(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	e := (*liveSet)(nil).edit()
	for range 5000 {
		e.set(r.Int64N(3 * liveChunkBits))
	}
	s := e.done()
	for range 200 {
		from := r.Int64N(3 * liveChunkBits)
		to := from + r.Int64N(3000)
		got, kept := s.bits(from, to, nil)
		want := 0
		for off := from; off < to; off++ {
			i := off - from
			if has := s.has(off); has != (got[i/64]&(1<<(i%64)) != 0) {
				t.Fatalf("bits(%d, %d): offset %d is %v in the set", from, to, off, has)
			}
			if s.has(off) {
				want++
			}
		}
		if kept != want || got.count() != want {
			t.Fatalf("bits(%d, %d) kept %d (%d bits), want %d", from, to, kept, got.count(), want)
		}
	}
}

// TestFilterLiveCut checks filterLive on a batch that the read's range
// cuts at both ends: only live rows inside [from, to) are kept.
func TestFilterLiveCut(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(9, 9))
	schema := arrow.NewSchema([]arrow.Field{{Name: "i64", Type: arrow.PrimitiveTypes.Int64}}, nil)
	const base, n = 1000, 300
	e := (*liveSet)(nil).edit()
	for off := int64(base); off < base+n; off++ {
		if r.IntN(2) == 0 {
			e.set(off)
		}
	}
	live := e.done()
	rec := randomRecord(mem, schema, r, n, false)
	defer rec.Release()
	for range 50 {
		from := base + r.Int64N(n)
		to := from + r.Int64N(base+n-from+1)
		got, err := filterLive(context.Background(), rec, base, from, to, live, mem)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		vals := rec.Column(0).(*array.Int64)
		for off := from; off < to; off++ {
			if live.has(off) {
				want = append(want, vals.Value(int(off-base)))
			}
		}
		if got == nil {
			if len(want) != 0 {
				t.Fatalf("[%d, %d): nothing kept, want %d rows", from, to, len(want))
			}
			continue
		}
		gv := got.Column(0).(*array.Int64).Int64Values()
		if !slices.Equal(gv, want) {
			t.Fatalf("[%d, %d): kept %v, want %v", from, to, gv, want)
		}
		got.Release()
	}
}
