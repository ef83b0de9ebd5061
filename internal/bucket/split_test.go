package bucket

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkSplit verifies that parts holds exactly the rows of rec, each in the
// part of its bucket, in rec's order.
func checkSplit(t *testing.T, rec arrow.RecordBatch, buckets []int32, parts []arrow.RecordBatch) {
	t.Helper()
	next := make([]int, len(parts)) // next row to see in each part
	for i, b := range buckets {
		part := parts[b]
		if part == nil {
			t.Fatalf("row %d: bucket %d has no batch", i, b)
		}
		k := next[b]
		next[b]++
		for j, col := range rec.Columns() {
			if !array.SliceEqual(col, int64(i), int64(i+1), part.Column(j), int64(k), int64(k+1)) {
				t.Fatalf("row %d column %d: bucket %d row %d differs", i, j, b, k)
			}
		}
	}
	for b, part := range parts {
		switch {
		case part == nil && next[b] != 0:
			t.Errorf("bucket %d: nil for %d rows", b, next[b])
		case part != nil && int(part.NumRows()) != next[b]:
			t.Errorf("bucket %d: %d rows, want %d", b, part.NumRows(), next[b])
		case part != nil && !part.Schema().Equal(rec.Schema()):
			t.Errorf("bucket %d: schema %s", b, part.Schema())
		}
	}
}

// withOtherColumns adds to rec columns of types no key can have, which Split
// must carry all the same: float64 and bool (gathered), a list, a struct and
// a dictionary (taken by compute).
func withOtherColumns(t *testing.T, mem memory.Allocator, r *rand.Rand, rec arrow.RecordBatch) arrow.RecordBatch {
	rows := int(rec.NumRows())
	fields := []arrow.Field{
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "struct", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for range rows {
		if r.IntN(8) == 0 {
			for _, fb := range b.Fields() {
				fb.AppendNull()
			}
			continue
		}
		b.Field(0).(*array.Float64Builder).Append(r.NormFloat64())
		b.Field(1).(*array.BooleanBuilder).Append(r.IntN(2) == 0)
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for range r.IntN(4) {
			lb.ValueBuilder().(*array.Int64Builder).Append(r.Int64())
		}
		sb := b.Field(3).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(strings.Repeat("s", r.IntN(5)))
		if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString([]string{"x", "y", "z"}[r.IntN(3)]); err != nil {
			t.Fatal(err)
		}
	}
	other := b.NewRecordBatch()
	defer other.Release()
	cols := append(rec.Columns(), other.Columns()...)
	schemaFields := append(rec.Schema().Fields(), fields...)
	return array.NewRecordBatch(arrow.NewSchema(schemaFields, nil), cols, int64(rows))
}

func TestSplit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(7, 8))
	keys := randomBatch(t, mem, r, 500)
	rec := withOtherColumns(t, mem, r, keys)
	keys.Release()
	defer rec.Release()
	sliced := rec.NewSlice(13, 400)
	defer sliced.Release()
	for _, batch := range []arrow.RecordBatch{rec, sliced} {
		for _, n := range []int{2, 3, 16, 1000} {
			a, err := NewAssigner(batch.Schema(), []int{3}, n)
			if err != nil {
				t.Fatal(err)
			}
			buckets := a.Assign(batch, nil)
			parts, err := Split(batch, buckets, n, mem)
			if err != nil {
				t.Fatal(err)
			}
			checkSplit(t, batch, buckets, parts)
			releaseAll(parts)
		}
	}
}

func TestSplitOneBucketRetains(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(t, mem, rand.New(rand.NewPCG(1, 1)), 50)
	buckets := make([]int32, 50)
	for i := range buckets {
		buckets[i] = 2
	}
	before := mem.CurrentAlloc()
	parts, err := Split(rec, buckets, 4, mem)
	if err != nil {
		t.Fatal(err)
	}
	if parts[2] != rec || parts[0] != nil || parts[1] != nil || parts[3] != nil {
		t.Fatalf("all rows in bucket 2: got %v", parts)
	}
	if mem.CurrentAlloc() != before {
		t.Error("a one-bucket split copied")
	}
	rec.Release() // the caller's reference; the part's must keep it alive
	checkSplit(t, parts[2], buckets, parts)
	releaseAll(parts)
}

func TestSplitEmpty(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(t, mem, rand.New(rand.NewPCG(1, 1)), 0)
	defer rec.Release()
	parts, err := Split(rec, nil, 3, mem)
	if err != nil || len(parts) != 3 || parts[0] != nil || parts[1] != nil || parts[2] != nil {
		t.Errorf("Split of no rows = %v, %v", parts, err)
	}
}

func TestSplitErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(t, mem, rand.New(rand.NewPCG(1, 1)), 3)
	defer rec.Release()
	cases := []struct {
		buckets []int32
		n       int
		want    string
	}{
		{[]int32{0, 1}, 2, "2 buckets for 3 rows"},
		{[]int32{0, 1, 2}, 2, "row 2 has bucket 2"},
		{[]int32{0, -1, 0}, 2, "row 1 has bucket -1"},
		{[]int32{0, 0, 0}, 0, "out of range"},
		{[]int32{5, 5, 5}, 2, "row 0 has bucket 5"},
	}
	for _, c := range cases {
		parts, err := Split(rec, c.buckets, c.n, mem)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Split(%v, %d) = %v, want an error with %q", c.buckets, c.n, err, c.want)
		}
		releaseAll(parts)
	}
}
