package bucket

import (
	"encoding/binary"
	"fmt"
	"go/parser"
	"go/token"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/murmur3"
)

// keyTypes are all the supported key types, each as a column of the test
// batch.
var keyTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8,
	arrow.PrimitiveTypes.Int16,
	arrow.PrimitiveTypes.Int32,
	arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8,
	arrow.PrimitiveTypes.Uint16,
	arrow.PrimitiveTypes.Uint32,
	arrow.FixedWidthTypes.Date32,
	arrow.FixedWidthTypes.Date64,
	arrow.FixedWidthTypes.Time32s,
	arrow.FixedWidthTypes.Time32ms,
	arrow.FixedWidthTypes.Time64us,
	arrow.FixedWidthTypes.Time64ns,
	&arrow.TimestampType{Unit: arrow.Second},
	&arrow.TimestampType{Unit: arrow.Millisecond},
	&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	&arrow.TimestampType{Unit: arrow.Nanosecond},
	arrow.BinaryTypes.String,
	arrow.BinaryTypes.LargeString,
	arrow.BinaryTypes.StringView,
	arrow.BinaryTypes.Binary,
	arrow.BinaryTypes.LargeBinary,
	arrow.BinaryTypes.BinaryView,
	&arrow.FixedSizeBinaryType{ByteWidth: 5},
	&arrow.Decimal32Type{Precision: 9, Scale: 2},
	&arrow.Decimal64Type{Precision: 18, Scale: 2},
	&arrow.Decimal128Type{Precision: 38, Scale: 10},
	&arrow.Decimal256Type{Precision: 76, Scale: 0},
}

// randomBatch returns a batch with one column of each keyTypes entry, rows
// long, with about a tenth of the values null.
func randomBatch(t testing.TB, mem memory.Allocator, r *rand.Rand, rows int) arrow.RecordBatch {
	fields := make([]arrow.Field, len(keyTypes))
	for i, dt := range keyTypes {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: dt, Nullable: true}
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, fb := range b.Fields() {
		for range rows {
			if r.IntN(10) == 0 {
				fb.AppendNull()
				continue
			}
			appendRandom(t, fb, r)
		}
	}
	return b.NewRecordBatch()
}

// appendRandom appends a random value, negative ones included, and strings of
// every length around murmur3's 4-byte blocks.
func appendRandom(t testing.TB, b array.Builder, r *rand.Rand) {
	i64 := int64(r.Uint64()) >> r.IntN(64)
	randBytes := func() []byte {
		out := make([]byte, r.IntN(12))
		for i := range out {
			out[i] = byte(r.Uint32())
		}
		return out
	}
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(i64))
	case *array.Int16Builder:
		b.Append(int16(i64))
	case *array.Int32Builder:
		b.Append(int32(i64))
	case *array.Int64Builder:
		b.Append(i64)
	case *array.Uint8Builder:
		b.Append(uint8(i64))
	case *array.Uint16Builder:
		b.Append(uint16(i64))
	case *array.Uint32Builder:
		b.Append(uint32(i64))
	case *array.Date32Builder:
		b.Append(arrow.Date32(int32(i64 % 100_000)))
	case *array.Date64Builder:
		b.Append(arrow.Date64(i64 % (100_000 * 86_400_000)))
	case *array.Time32Builder:
		b.Append(arrow.Time32(r.IntN(86_400_000)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(r.Int64N(86_400_000_000_000)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(i64 / 1000))
	case *array.StringBuilder:
		b.Append(string(randBytes()))
	case *array.LargeStringBuilder:
		b.Append(string(randBytes()))
	case *array.StringViewBuilder:
		b.Append(strings.Repeat(string(randBytes()), 1+r.IntN(3))) // past the 12-byte inline limit too
	case *array.BinaryBuilder:
		b.Append(randBytes())
	case *array.BinaryViewBuilder:
		b.Append(append(randBytes(), randBytes()...))
	case *array.FixedSizeBinaryBuilder:
		b.Append(append(randBytes(), make([]byte, 12)...)[:5])
	case *array.Decimal32Builder:
		b.Append(decimal.Decimal32(int32(i64) % 1_000_000_000))
	case *array.Decimal64Builder:
		b.Append(decimal.Decimal64(i64 % 1_000_000_000_000_000_000))
	case *array.Decimal128Builder:
		b.Append(decimal128.New(int64(r.Uint64())>>r.IntN(64), r.Uint64()))
	case *array.Decimal256Builder:
		b.Append(decimal256.New(r.Uint64()>>r.IntN(64), r.Uint64(), r.Uint64(), r.Uint64()))
	default:
		t.Fatalf("no random values for %T", b)
	}
}

// refBytes encodes value i of arr as the spec says, by another route than
// feed: arrow-go's accessors, time.Time and math/big. nil means null.
func refBytes(t testing.TB, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return nil
	}
	long := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	switch a := arr.(type) {
	case *array.Int8:
		return long(int64(a.Value(i)))
	case *array.Int16:
		return long(int64(a.Value(i)))
	case *array.Int32:
		return long(int64(a.Value(i)))
	case *array.Int64:
		return long(a.Value(i))
	case *array.Uint8:
		return long(int64(a.Value(i)))
	case *array.Uint16:
		return long(int64(a.Value(i)))
	case *array.Uint32:
		return long(int64(a.Value(i)))
	case *array.Date32:
		return long(int64(a.Value(i)))
	case *array.Date64:
		return long(a.Value(i).ToTime().Unix() / 86400) // ToTime truncates to the day
	case *array.Time32:
		return long(a.Value(i).ToTime(a.DataType().(*arrow.Time32Type).Unit).UnixMicro())
	case *array.Time64:
		return long(a.Value(i).ToTime(a.DataType().(*arrow.Time64Type).Unit).UnixMicro())
	case *array.Timestamp:
		return long(a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UnixMicro())
	case *array.String:
		return []byte(a.Value(i))
	case *array.LargeString:
		return []byte(a.Value(i))
	case *array.StringView:
		return []byte(a.Value(i))
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.BinaryView:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	case *array.Decimal32:
		return javaBytes(big.NewInt(int64(a.Value(i))))
	case *array.Decimal64:
		return javaBytes(big.NewInt(int64(a.Value(i))))
	case *array.Decimal128:
		return javaBytes(a.Value(i).BigInt())
	case *array.Decimal256:
		return javaBytes(a.Value(i).BigInt())
	}
	t.Fatalf("no reference encoding for %T", arr)
	return nil
}

// refBucket is the bucket of row i keyed by cols, from refBytes.
func refBucket(t testing.TB, rec arrow.RecordBatch, cols []int, i, n int) int32 {
	var key []byte
	for _, c := range cols {
		b := refBytes(t, rec.Column(c), i)
		if b == nil {
			return 0
		}
		key = append(key, b...)
	}
	return Of(murmur3.SeedSum32(0, key), n)
}

func checkAssign(t *testing.T, rec arrow.RecordBatch, cols []int, n int) {
	t.Helper()
	a, err := NewAssigner(rec.Schema(), cols, n)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Assign(rec, nil)
	if len(got) != int(rec.NumRows()) {
		t.Fatalf("key %v: %d buckets for %d rows", cols, len(got), rec.NumRows())
	}
	for i, b := range got {
		if want := refBucket(t, rec, cols, i, n); b != want {
			t.Fatalf("key %v (%s), row %d: bucket %d, want %d", cols, rec.Schema().Field(cols[0]).Type, i, b, want)
		}
	}
	if len(cols) == 1 {
		col := rec.Column(cols[0])
		for i := range got {
			h, ok := Hash(col, i)
			if ok != col.IsValid(i) || (ok && Of(h, n) != got[i]) {
				t.Fatalf("%s row %d: Hash gives bucket %d (valid %v), Assign %d", col.DataType(), i, Of(h, n), ok, got[i])
			}
		}
	}
}

// TestAssignEveryType checks Assign against the reference encoding for every
// key type alone, for random multi-column keys, and on a slice of the batch
// (non-zero array offsets).
func TestAssignEveryType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(5, 6))
	rec := randomBatch(t, mem, r, 300)
	defer rec.Release()
	sliced := rec.NewSlice(37, 251)
	defer sliced.Release()
	for _, batch := range []arrow.RecordBatch{rec, sliced} {
		for c := range keyTypes {
			checkAssign(t, batch, []int{c}, 16)
		}
		for range 40 {
			cols := r.Perm(len(keyTypes))[:2+r.IntN(3)]
			checkAssign(t, batch, cols, 1+r.IntN(100))
		}
	}
}

func TestAssignNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues([]int64{34, 0, 34, 0}, []bool{true, false, true, false})
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: col.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 4)
	defer rec.Release()
	a, err := NewAssigner(schema, []int{0}, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, 1, 10)
	out = a.Assign(rec, out)
	if want := []int32{79, 0, 79, 0}; fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("buckets %v, want %v", out, want)
	}
	if _, ok := Hash(col, 1); ok {
		t.Error("Hash of a null reported a value")
	}
}

func TestAssignReusesOut(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(t, mem, rand.New(rand.NewPCG(1, 1)), 100)
	defer rec.Release()
	a, err := NewAssigner(rec.Schema(), []int{3}, 8)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]int32, 0, 100)
	if out := a.Assign(rec, buf); &out[0] != &buf[:1][0] {
		t.Error("Assign did not reuse a large enough out")
	}
	if allocs := testing.AllocsPerRun(20, func() { a.Assign(rec, buf) }); allocs != 0 {
		t.Errorf("Assign of a single-column key allocates %v times", allocs)
	}
}

// TestAssignConcurrent shares one Assigner between goroutines, as a table's
// writers do; it is for the race detector.
func TestAssignConcurrent(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(t, mem, rand.New(rand.NewPCG(2, 2)), 200)
	defer rec.Release()
	a, err := NewAssigner(rec.Schema(), []int{3, 17}, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := a.Assign(rec, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if got := a.Assign(rec, nil); !slices.Equal(got, want) {
					t.Error("concurrent Assign disagrees")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestRefusedTypes(t *testing.T) {
	refused := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean,
		arrow.FixedWidthTypes.Float16,
		arrow.PrimitiveTypes.Float32,
		arrow.PrimitiveTypes.Float64,
		arrow.PrimitiveTypes.Uint64,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		arrow.ListOf(arrow.PrimitiveTypes.Int64),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}),
		arrow.Null,
	}
	for _, dt := range refused {
		err := CheckType(dt)
		if err == nil || !strings.Contains(err.Error(), "cannot be a bucket key") {
			t.Errorf("%s: %v", dt, err)
		}
	}
	if err := CheckType(arrow.PrimitiveTypes.Float64); !strings.Contains(err.Error(), "Iceberg does not bucket") {
		t.Errorf("float64 refusal does not say why: %v", err)
	}
}

func TestNewAssignerErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	cases := []struct {
		cols []int
		n    int
		want []string
	}{
		{[]int{0}, 0, []string{"bucket count 0"}},
		{nil, 4, []string{"no key columns"}},
		{[]int{2}, 4, []string{"key column 2: schema has 2 columns"}},
		{[]int{0, 0}, 4, []string{"key column 0 given twice"}},
		{[]int{1}, 4, []string{"key column 1 (amount)", "Iceberg does not bucket"}},
		// Every problem at once.
		{[]int{1, 5}, -1, []string{"bucket count -1", "(amount)", "key column 5"}},
	}
	for _, c := range cases {
		_, err := NewAssigner(schema, c.cols, c.n)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("NewAssigner(%v, %d) = %v, want it to mention %q", c.cols, c.n, err, w)
			}
		}
	}
}

func TestAssignWrongSchemaPanics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(t, mem, rand.New(rand.NewPCG(1, 1)), 10)
	defer rec.Release()
	other := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}}, nil)
	a, err := NewAssigner(other, []int{0}, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Assign of a batch of another schema did not panic")
		}
	}()
	a.Assign(rec, nil)
}

// TestImportsNoProjectPackage keeps bucket at the bottom of the package graph.
func TestImportsNoProjectPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if strings.HasPrefix(imp.Path.Value, `"github.com/lakestream/`) {
				t.Errorf("%s imports %s; bucket must import nothing of the project", name, imp.Path.Value)
			}
		}
	}
}
