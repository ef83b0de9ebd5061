package rowenc

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allTypes is a schema of every column type a table can have.
func allTypes() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "y", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
	}, nil)
}

const jsonRows = `[
 {"b": true, "i8": -128, "i16": -2, "i32": 2147483647, "i64": -9223372036854775808, "f32": 1.5, "f64": -2.25,
  "dec": "-12345678901234567890.1234", "s": "a\u0000b", "bin": "AAEC", "d": 19000, "t": 3600000000,
  "ts": "2024-01-02T03:04:05.000006Z", "l": ["x", null, ""], "st": {"x": 7, "y": [1, null, 3]},
  "m": [{"key": "k", "value": 1.0}, {"key": "n", "value": null}]},
 {"b": null, "i8": null, "i16": null, "i32": null, "i64": null, "f32": null, "f64": null, "dec": null, "s": null,
  "bin": null, "d": null, "t": null, "ts": null, "l": null, "st": null, "m": null},
 {"b": false, "i8": 0, "i16": 0, "i32": 0, "i64": 0, "f32": 0, "f64": 0, "dec": "0", "s": "", "bin": "",
  "d": 0, "t": 0, "ts": "1970-01-01T00:00:00Z", "l": [], "st": {"x": null, "y": null}, "m": []}
]`

func readJSON(t testing.TB, s *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, s, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestRowRoundTrip(t *testing.T) {
	s := allTypes()
	rec := readJSON(t, s, jsonRows)
	defer rec.Release()
	c, err := NewCodec(s.Fields())
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer rb.Release()
	vals := make([]Value, s.NumFields())
	var rows [][]byte
	for i := 0; i < int(rec.NumRows()); i++ {
		buf := c.Values(rec.Columns(), i, nil, vals)
		_ = buf
		rows = append(rows, c.AppendRow(nil, vals))
	}
	for _, row := range rows {
		if _, err := c.AppendRowTo(rb.Fields(), nil, row, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := rb.NewRecordBatch()
	defer got.Release()
	if !array.RecordEqual(rec, got) {
		t.Fatalf("round trip:\n got %v\nwant %v", got, rec)
	}
}

// A row written before columns were added reads them as nulls.
func TestRowFewerColumns(t *testing.T) {
	s := allTypes()
	old, err := NewCodec(s.Fields()[:3])
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := NewCodec(s.Fields())
	row := old.AppendRow(nil, []Value{{Raw: FromBool(true)}, Null, {Raw: FromInt(5, 2)}})
	vals, err := cur.DecodeRow(row, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != s.NumFields() || Int(vals[2].Raw) != 5 || !vals[1].Null || !vals[3].Null || !vals[15].Null {
		t.Fatalf("decoded %v", vals)
	}
	if _, err := old.DecodeRow(cur.AppendRow(nil, vals), nil); err == nil {
		t.Fatal("a row of more columns than the schema decoded")
	}
}

func keyTypes() []arrow.Field {
	return []arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8}, {Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32}, {Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
		{Name: "bin", Type: arrow.BinaryTypes.Binary}, {Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32}, {Name: "t", Type: arrow.FixedWidthTypes.Time64us},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
	}
}

// Encoded keys sort as their values do, and decode back.
func TestKeyOrderAndRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range keyTypes() {
		t.Run(f.Name, func(t *testing.T) {
			b := array.NewBuilder(memory.DefaultAllocator, f.Type)
			defer b.Release()
			const n = 300
			for range n {
				appendRandom(r, b)
			}
			a := b.NewArray()
			defer a.Release()
			enc, err := KeyEncoder(f.Type)
			if err != nil {
				t.Fatal(err)
			}
			type kv struct {
				key []byte
				i   int
			}
			kvs := make([]kv, n)
			for i := range kvs {
				kvs[i] = kv{enc(nil, a, i), i}
			}
			slices.SortFunc(kvs, func(x, y kv) int { return bytes.Compare(x.key, y.key) })
			for i := 1; i < n; i++ {
				if c := compareArr(a, kvs[i-1].i, kvs[i].i); c > 0 {
					t.Fatalf("key order: value %d sorts after %d", kvs[i-1].i, kvs[i].i)
				} else if c == 0 && !bytes.Equal(kvs[i-1].key, kvs[i].key) {
					t.Fatalf("equal values %d, %d encode differently", kvs[i-1].i, kvs[i].i)
				}
			}
			out := array.NewBuilder(memory.DefaultAllocator, f.Type)
			defer out.Release()
			for i := range n {
				if err := DecodeKey(enc(nil, a, i), []array.Builder{out}); err != nil {
					t.Fatal(err)
				}
			}
			got := out.NewArray()
			defer got.Release()
			if !array.Equal(a, got) {
				t.Fatalf("key round trip differs")
			}
		})
	}
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.ListOf(arrow.PrimitiveTypes.Int32)} {
		if _, err := KeyEncoder(dt); err == nil {
			t.Errorf("%s accepted as a key type", dt)
		}
	}
}

// A composite key sorts column by column: a string that is a prefix of
// another sorts first, whatever follows it.
func TestCompositeKeyOrder(t *testing.T) {
	se, _ := KeyEncoder(arrow.BinaryTypes.String)
	ie, _ := KeyEncoder(arrow.PrimitiveTypes.Int64)
	key := func(s string, i int64) []byte {
		sb := array.NewStringBuilder(memory.DefaultAllocator)
		sb.Append(s)
		sa := sb.NewArray()
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		ib.Append(i)
		ia := ib.NewArray()
		return ie(se(nil, sa, 0), ia, 0)
	}
	ordered := [][]byte{key("", 5), key("a", -1), key("a", 3), key("a\x00", -9), key("ab", -100), key("b", 0)}
	for i := 1; i < len(ordered); i++ {
		if bytes.Compare(ordered[i-1], ordered[i]) >= 0 {
			t.Fatalf("key %d does not sort before key %d", i-1, i)
		}
	}
}

func appendRandom(r *rand.Rand, b array.Builder) {
	small := func() int64 { return r.Int64N(2001) - 1000 }
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(r.IntN(256) - 128))
	case *array.Int16Builder:
		b.Append(int16(small()))
	case *array.Int32Builder:
		b.Append(int32(r.Int32() - r.Int32()))
	case *array.Int64Builder:
		b.Append(r.Int64() - r.Int64())
	case *array.Date32Builder:
		b.Append(arrow.Date32(small()))
	case *array.Time64Builder:
		b.Append(arrow.Time64(r.Int64N(86400e6)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(r.Int64() - r.Int64()))
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 1)
	case *array.Decimal128Builder:
		b.Append(decimalOf(r.Int64()-r.Int64(), r.Uint64(), r.IntN(3)))
	case *array.StringBuilder:
		b.Append(randBytes(r))
	case *array.BinaryBuilder:
		b.Append([]byte(randBytes(r)))
	}
}

func randBytes(r *rand.Rand) string {
	alphabet := "\x00\x01a\xffb"
	n := r.IntN(5)
	var sb strings.Builder
	for range n {
		sb.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func compareArr(a arrow.Array, i, j int) int {
	switch a := a.(type) {
	case *array.String:
		return strings.Compare(a.Value(i), a.Value(j))
	case *array.Binary:
		return bytes.Compare(a.Value(i), a.Value(j))
	case *array.Boolean:
		return cmp.Compare(btoi(a.Value(i)), btoi(a.Value(j)))
	case *array.Decimal128:
		return a.Value(i).Cmp(a.Value(j))
	case *array.Int8:
		return cmp.Compare(a.Value(i), a.Value(j))
	case *array.Int16:
		return cmp.Compare(a.Value(i), a.Value(j))
	case *array.Int32:
		return cmp.Compare(a.Value(i), a.Value(j))
	case *array.Int64:
		return cmp.Compare(a.Value(i), a.Value(j))
	case *array.Date32:
		return cmp.Compare(a.Value(i), a.Value(j))
	case *array.Time64:
		return cmp.Compare(a.Value(i), a.Value(j))
	case *array.Timestamp:
		return cmp.Compare(a.Value(i), a.Value(j))
	}
	panic("type")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPinnedBytes pins the examples of docs/format/keyindex.md.
func TestPinnedBytes(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String},
	}, nil)
	rec := readJSON(t, s, `[{"id": 5, "name": "ab", "score": null, "region": "eu"}]`)
	defer rec.Release()
	ie, _ := KeyEncoder(arrow.PrimitiveTypes.Int64)
	se, _ := KeyEncoder(arrow.BinaryTypes.String)
	key := se(ie(nil, rec.Column(0), 0), rec.Column(3), 0)
	if got, want := fmt.Sprintf("% x", key), "80 00 00 00 00 00 00 05 65 75 00 01"; got != want {
		t.Errorf("key bytes %s, want %s", got, want)
	}
	c, err := NewCodec(s.Fields()[:3])
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]Value, 3)
	c.Values(rec.Columns()[:3], 0, nil, vals)
	if got, want := fmt.Sprintf("% x", c.AppendRow(nil, vals)), "03 04 05 00 00 00 00 00 00 00 02 61 62"; got != want {
		t.Errorf("row bytes %s, want %s", got, want)
	}
}
