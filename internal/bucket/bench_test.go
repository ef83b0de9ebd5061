package bucket

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/murmur3"
)

const benchRows = 64 << 10

// benchBatch is benchRows rows of (id int64, amount float64, kind string,
// ts timestamp[us, UTC]), the shape of the README's example table, with 1%
// nulls outside id.
func benchBatch(b *testing.B, mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	r := rand.New(rand.NewPCG(1, 2))
	id := rb.Field(0).(*array.Int64Builder)
	amount := rb.Field(1).(*array.Float64Builder)
	kind := rb.Field(2).(*array.StringBuilder)
	ts := rb.Field(3).(*array.TimestampBuilder)
	base := int64(1_700_000_000_000_000)
	for i := range benchRows {
		id.Append(r.Int64())
		null := r.IntN(100) == 0
		if null {
			amount.AppendNull()
			kind.AppendNull()
			ts.AppendNull()
			continue
		}
		amount.Append(r.Float64() * 1000)
		kind.Append(fmt.Sprintf("kind-%d-%x", r.IntN(1000), r.Uint32()))
		ts.Append(arrow.Timestamp(base + int64(i)*1000 + r.Int64N(1000)))
	}
	return rb.NewRecordBatch()
}

func reportRows(b *testing.B, rows int) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// Benchmarks use the plain Go allocator, as a node does: the checked one
// adds bookkeeping per allocation. The tests check for leaks.

func BenchmarkAssign(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := benchBatch(b, mem)
	defer rec.Release()
	for _, k := range []struct {
		name string
		cols []int
	}{
		{"int64", []int{0}},
		{"string", []int{2}},
		{"timestamp", []int{3}},
		{"int64+string", []int{0, 2}},
	} {
		b.Run(k.name, func(b *testing.B) {
			a, err := NewAssigner(rec.Schema(), k.cols, 16)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]int32, benchRows)
			b.ReportAllocs()
			for b.Loop() {
				out = a.Assign(rec, out)
			}
			reportRows(b, benchRows)
		})
	}
}

func BenchmarkSplit(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := benchBatch(b, mem)
	defer rec.Release()
	// The rejected ways, kept to show the measurement behind the choice:
	// compute Take for every column, and one Take of every column by the
	// whole bucket-ordered permutation followed by a zero-copy slice per
	// bucket.
	impls := []struct {
		name  string
		split func(arrow.RecordBatch, []int32, int, memory.Allocator) ([]arrow.RecordBatch, error)
	}{
		{"gather", Split},
		{"take", splitTake},
		{"permute", splitPermute},
	}
	for _, n := range []int{1, 4, 16, 128} {
		a, err := NewAssigner(rec.Schema(), []int{0}, n)
		if err != nil {
			b.Fatal(err)
		}
		buckets := a.Assign(rec, nil)
		for _, impl := range impls {
			if n == 1 && impl.name != "gather" {
				continue // Split returns the batch itself
			}
			b.Run(fmt.Sprintf("%s/n=%d", impl.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					parts, err := impl.split(rec, buckets, n, mem)
					if err != nil {
						b.Fatal(err)
					}
					releaseAll(parts)
				}
				reportRows(b, benchRows)
			})
		}
	}
}

// splitTake is Split with compute Take for every column.
func splitTake(rec arrow.RecordBatch, buckets []int32, n int, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	counts := make([]int, n)
	for _, b := range buckets {
		counts[b]++
	}
	idx, starts := groupRows(buckets, counts)
	ctx := compute.WithAllocator(context.Background(), mem)
	out := make([]arrow.RecordBatch, n)
	for b, c := range counts {
		if c == 0 {
			continue
		}
		indices := int32Array(idx[starts[b] : starts[b]+c])
		cols := make([]arrow.Array, rec.NumCols())
		for j, col := range rec.Columns() {
			t, err := compute.TakeArray(ctx, col, indices)
			if err != nil {
				return nil, err
			}
			cols[j] = t
		}
		indices.Release()
		out[b] = array.NewRecordBatch(rec.Schema(), cols, int64(c))
		for _, c := range cols {
			c.Release()
		}
	}
	return out, nil
}

// splitPermute is the rejected Split: every part shares the buffers of one
// reordered batch.
func splitPermute(rec arrow.RecordBatch, buckets []int32, n int, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	counts := make([]int, n)
	for _, b := range buckets {
		counts[b]++
	}
	idx, starts := groupRows(buckets, counts)
	all, err := take(compute.WithAllocator(context.Background(), mem), rec, idx)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	out := make([]arrow.RecordBatch, n)
	for b, c := range counts {
		if c > 0 {
			out[b] = all.NewSlice(int64(starts[b]), int64(starts[b]+c))
		}
	}
	return out, nil
}

// BenchmarkHashLong compares hashLong with twmb/murmur3 over the same 8
// encoded bytes.
func BenchmarkHashLong(b *testing.B) {
	vals := make([]int64, 4096)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range vals {
		vals[i] = r.Int64()
	}
	var sink uint32
	b.Run("murmur3.SeedSum32", func(b *testing.B) {
		var buf [8]byte
		for b.Loop() {
			for _, v := range vals {
				binary.LittleEndian.PutUint64(buf[:], uint64(v))
				sink += murmur3.SeedSum32(0, buf[:])
			}
		}
		reportRows(b, len(vals))
	})
	b.Run("hashLong", func(b *testing.B) {
		for b.Loop() {
			for _, v := range vals {
				sink += hashLong(v)
			}
		}
		reportRows(b, len(vals))
	})
	_ = sink
}
