package duck

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// typeCase is one column of the round-trip table: its Arrow type, how to
// append row i (nil → null), and the Arrow type DuckDB returns for it.
type typeCase struct {
	name   string
	in     arrow.DataType
	out    arrow.DataType // nil: same as in
	append func(b array.Builder, i int)
}

var (
	tsUTC   = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsLocal = &arrow.TimestampType{Unit: arrow.Microsecond}
)

func typeCases() []typeCase {
	dec := func(p, s int32) *arrow.Decimal128Type { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	when := func(i int) time.Time {
		return time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC).Add(time.Duration(i-6) * 49 * time.Hour)
	}
	return []typeCase{
		{"b", arrow.FixedWidthTypes.Boolean, nil, func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(i%3 == 0) }},
		{"i8", arrow.PrimitiveTypes.Int8, nil, func(b array.Builder, i int) { b.(*array.Int8Builder).Append(int8(i*21 - 128)) }},
		{"i16", arrow.PrimitiveTypes.Int16, nil, func(b array.Builder, i int) { b.(*array.Int16Builder).Append(int16(i*5000 - 32768)) }},
		{"i32", arrow.PrimitiveTypes.Int32, nil, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i*300_000_000 - 2_000_000_000)) }},
		{"i64", arrow.PrimitiveTypes.Int64, nil, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i-6) * 1_000_000_000_007) }},
		{"u8", arrow.PrimitiveTypes.Uint8, nil, func(b array.Builder, i int) { b.(*array.Uint8Builder).Append(uint8(i * 21)) }},
		{"u64", arrow.PrimitiveTypes.Uint64, nil, func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(uint64(i) << 60) }},
		{"f32", arrow.PrimitiveTypes.Float32, nil, func(b array.Builder, i int) { b.(*array.Float32Builder).Append(float32(i) / 4) }},
		{"f64", arrow.PrimitiveTypes.Float64, nil, func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(i-6) * 1e10 / 3) }},
		{"d4", dec(4, 1), nil, func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i-6) * 1111))
		}},
		{"d9", dec(9, 2), nil, func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i-6) * 98765432))
		}},
		{"d18", dec(18, 3), nil, func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i-6) * 123456789012345678 / 6))
		}},
		{"d38", dec(38, 10), nil, func(b array.Builder, i int) {
			v := decimal128.FromI64(int64(i - 6)).Mul(decimal128.FromU64(1_000_000_000_000_000_000)).Mul(decimal128.FromI64(12345678901))
			b.(*array.Decimal128Builder).Append(v)
		}},
		{"s", arrow.BinaryTypes.String, nil, func(b array.Builder, i int) {
			b.(*array.StringBuilder).Append(strings.Repeat("é", i) + fmt.Sprint(i)) // inlined and not (> 12 bytes)
		}},
		{"ls", arrow.BinaryTypes.LargeString, arrow.BinaryTypes.String, func(b array.Builder, i int) {
			b.(*array.LargeStringBuilder).Append(strings.Repeat("xy", i))
		}},
		{"bin", arrow.BinaryTypes.Binary, nil, func(b array.Builder, i int) {
			b.(*array.BinaryBuilder).Append([]byte{0, byte(i), 0xff, byte(i * 7)})
		}},
		{"d", arrow.FixedWidthTypes.Date32, nil, func(b array.Builder, i int) {
			b.(*array.Date32Builder).Append(arrow.Date32FromTime(when(i)))
		}},
		{"t", arrow.FixedWidthTypes.Time64us, nil, func(b array.Builder, i int) {
			b.(*array.Time64Builder).Append(arrow.Time64(int64(i) * 7_012_345_678))
		}},
		{"ts", tsLocal, nil, func(b array.Builder, i int) {
			v, _ := arrow.TimestampFromTime(when(i), arrow.Microsecond)
			b.(*array.TimestampBuilder).Append(v)
		}},
		{"tstz", tsUTC, nil, func(b array.Builder, i int) {
			v, _ := arrow.TimestampFromTime(when(i), arrow.Microsecond)
			b.(*array.TimestampBuilder).Append(v)
		}},
		{"tsms", &arrow.TimestampType{Unit: arrow.Millisecond}, tsLocal, func(b array.Builder, i int) {
			v, _ := arrow.TimestampFromTime(when(i), arrow.Millisecond)
			b.(*array.TimestampBuilder).Append(v)
		}},
		{"tsns", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}, tsUTC, func(b array.Builder, i int) {
			v, _ := arrow.TimestampFromTime(when(i), arrow.Nanosecond)
			b.(*array.TimestampBuilder).Append(v)
		}},
		{"l", arrow.ListOf(arrow.PrimitiveTypes.Int32), nil, func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			for j := range i % 4 { // includes empty lists
				if j == 1 {
					lb.ValueBuilder().AppendNull()
					continue
				}
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(i*10 + j))
			}
		}},
		{"ll", arrow.LargeListOf(arrow.BinaryTypes.String), arrow.ListOf(arrow.BinaryTypes.String), func(b array.Builder, i int) {
			lb := b.(*array.LargeListBuilder)
			lb.Append(true)
			for j := range i % 3 {
				lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("item-%d-%d-long-enough", i, j))
			}
		}},
		{"st", arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "c", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		), nil, func(b array.Builder, i int) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
			if i%2 == 0 {
				sb.FieldBuilder(1).AppendNull()
			} else {
				sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("s", i))
			}
			cb := sb.FieldBuilder(2).(*array.ListBuilder)
			cb.Append(true)
			for j := range i % 3 {
				cb.ValueBuilder().(*array.Int64Builder).Append(int64(i * j))
			}
		}},
		{"m", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), nil, func(b array.Builder, i int) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			for j := range i % 3 {
				mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", j))
				if j == 1 {
					mb.ItemBuilder().AppendNull()
				} else {
					mb.ItemBuilder().(*array.Int64Builder).Append(int64(i + j))
				}
			}
		}},
		{"ls2", arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "y", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		)), nil, func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			for j := range i % 3 {
				sb := lb.ValueBuilder().(*array.StructBuilder)
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(j))
				yb := sb.FieldBuilder(1).(*array.ListBuilder)
				yb.Append(true)
				yb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint(i, "/", j))
			}
		}},
	}
}

// typesRecord builds rows id 0..n-1 of every type case; row i of column c
// is null when (i+c) % 5 == 4.
func typesRecord(mem memory.Allocator, cases []typeCase, n int) arrow.RecordBatch {
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for _, tc := range cases {
		fields = append(fields, arrow.Field{Name: tc.name, Type: tc.in, Nullable: true})
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		for c, tc := range cases {
			if (i+c)%5 == 4 {
				b.Field(c + 1).AppendNull()
			} else {
				tc.append(b.Field(c+1), i)
			}
		}
	}
	return b.NewRecordBatch()
}

func TestTypeRoundTrip(t *testing.T) {
	mem := checkedAlloc(t)
	cases := typeCases()
	rec := typesRecord(mem, cases, 13)
	defer rec.Release()
	r := newFakeResolver()
	addTable(t, r, "default.types", rec, 2) // slices with non-zero offsets
	e := newTestEngine(t, r)

	got := query(t, e, "SELECT * FROM types ORDER BY id")
	for c, tc := range cases {
		want := tc.out
		if want == nil {
			want = tc.in
		}
		f := got.schema.Field(c + 1)
		if f.Name != tc.name || !arrow.TypeEqual(f.Type, want) {
			t.Errorf("column %s: %s %s, want %s %s", tc.name, f.Name, f.Type, tc.name, want)
		}
	}
	wantRes := result{rows: rowStrings(castTo(t, rec, got.schema))}
	if got.String() != wantRes.String() {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(wantRes.String(), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("row %d:\n got %s\nwant %s", i, gl[i], wl[i])
			}
		}
		if len(gl) != len(wl) {
			t.Errorf("%d rows, want %d", len(gl), len(wl))
		}
	}
}

// castTo casts rec's columns to the types of schema (large_utf8 → utf8,
// timestamp[ns, Europe/Paris] → timestamp[us, UTC], ...), so that values
// print alike.
func castTo(t *testing.T, rec arrow.RecordBatch, schema *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for i, col := range rec.Columns() {
		to := schema.Field(i).Type
		if arrow.TypeEqual(col.DataType(), to) {
			col.Retain()
			cols[i] = col
			continue
		}
		c, err := compute.CastArray(context.Background(), col, compute.SafeCastOptions(to))
		if err != nil {
			t.Fatalf("cast column %d to %s: %v", i, to, err)
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	t.Cleanup(out.Release)
	return out
}

// TestTypesInDuckDB checks that DuckDB reads the values, not just passes
// them through: functions over each type agree with Go.
func TestTypesInDuckDB(t *testing.T) {
	mem := checkedAlloc(t)
	rec := typesRecord(mem, typeCases(), 13)
	defer rec.Release()
	r := newFakeResolver()
	addTable(t, r, "default.types", rec, 5)
	e := newTestEngine(t, r)

	wantRows(t, query(t, e, `SELECT id, b, i16 + 1, d9 * 2, d38 / 1e10, length(s), octet_length(bin),
		strftime(tstz, '%Y-%m-%d %H:%M:%S.%f'), typeof(tsns), l[1], len(ll), st.a, st.c, m['k0'], ls2[1].y[1]
		FROM types WHERE id IN (3, 5) ORDER BY id`),
		"3|true|-17767|-5925925.92|-3.7037036703e+08|4|4|2024-02-23 10:14:15.123456|TIMESTAMP WITH TIME ZONE|30|0|3|[]|(null)|(null)",
		"5|false|-7767|-1975308.64|-1.2345678901e+08|6|4|(null)|TIMESTAMP WITH TIME ZONE|50|2|(null)|(null)|5|5/0")
	wantRows(t, query(t, e, `SELECT count(b), sum(i64), sum(d4), max(s), min(d), max(t), count(m) FROM types`),
		"11|3000000000021|333.3|éééééééééééé12|2024-02-17|21:25:35.802458|11")
}

// TestLargeLists: list children far larger than a DuckDB chunk, with nulls
// and strings, across record slices.
func TestLargeLists(t *testing.T) {
	mem := checkedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "ls", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var sum, nulls int64
	for i := range 50 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb, sb := b.Field(1).(*array.ListBuilder), b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		sb.Append(true)
		for j := range 500 {
			if (i+j)%7 == 0 {
				lb.ValueBuilder().AppendNull()
				nulls++
			} else {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(j))
				sum += int64(j)
			}
			sb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("value %d of row %d", j, i))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r := newFakeResolver()
	addTable(t, r, "default.lists", rec, 7)
	e := newTestEngine(t, r)

	wantRows(t, query(t, e, `SELECT sum(list_sum(l)), sum(len(l) - len(list_filter(l, x -> x IS NOT NULL))),
		sum(len(ls)), max(ls[500]) FROM lists`),
		fmt.Sprintf("%d|%d|25000|value 499 of row 9", sum, nulls))
	got := query(t, e, "SELECT id, l, ls FROM lists ORDER BY id")
	want := result{rows: rowStrings(rec)}
	if got.String() != want.String() {
		t.Error("lists did not round-trip")
	}
}

// TestResultTypes pins DuckDB's Arrow export of types Lakestream tables do
// not have but queries produce.
func TestResultTypes(t *testing.T) {
	e, _, _ := withEvents(t)
	got := query(t, e, `SELECT sum(id) AS s, 170141183460469231731687303715884105727::HUGEINT AS h,
		TIMESTAMPTZ '2025-01-02 03:04:05+02' AS tz, INTERVAL 1 DAY AS i, count(*) AS n, avg(id) AS a,
		'00000000-0000-0000-0000-000000000001'::UUID AS u, [1, 2] AS l, {'a': 1} AS st, MAP {'k': 1.5} AS m
		FROM events`)
	for _, tc := range []struct {
		name string
		want arrow.DataType
	}{
		{"s", &arrow.Decimal128Type{Precision: 38, Scale: 0}},
		{"h", &arrow.Decimal128Type{Precision: 38, Scale: 0}},
		{"tz", tsUTC},
		{"i", arrow.FixedWidthTypes.MonthDayNanoInterval},
		{"n", arrow.PrimitiveTypes.Int64},
		{"a", arrow.PrimitiveTypes.Float64},
		{"u", arrow.BinaryTypes.String},
		{"l", arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{"st", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true})},
		{"m", arrow.MapOf(arrow.BinaryTypes.String, &arrow.Decimal128Type{Precision: 2, Scale: 1})},
	} {
		idx := got.schema.FieldIndices(tc.name)
		if len(idx) != 1 || !arrow.TypeEqual(got.schema.Field(idx[0]).Type, tc.want) {
			t.Errorf("column %s: %v, want %s", tc.name, got.schema.Field(idx[0]).Type, tc.want)
		}
	}
	// arrow-go prints decimal(38,0) in exponent form.
	wantRows(t, got, `435|1.7014118346046923173168730371588410573e+38|2025-01-02T01:04:05Z|{"months":0,"days":1,"nanoseconds":0}|30|14.5|00000000-0000-0000-0000-000000000001|[1,2]|{"a":1}|[{"key":"k","value":"1.5"}]`)
}

// TestInvalidUTF8: DuckDB requires VARCHAR to be UTF-8; a utf8 column with
// invalid bytes fails the scan (BLOB takes any bytes). The check agrees
// with Go's unicode/utf8.
func TestInvalidUTF8(t *testing.T) {
	values := []string{
		"plain ascii, longer than twelve bytes", "é", "€ and 𝄞", "\U0010FFFF", "",
		"\xff", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "abc\xe2\x82", "ascii then bad: \x80",
	}
	mem := checkedAlloc(t)
	var fields []arrow.Field
	for i := range values {
		fields = append(fields, arrow.Field{Name: fmt.Sprint("c", i), Type: arrow.BinaryTypes.String})
	}
	fields = append(fields, arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary})
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for row := range 3 {
		for i, v := range values {
			if row == 1 {
				v = "fine" // the bad value is not in the first row
			}
			b.Field(i).(*array.StringBuilder).Append(v)
		}
		b.Field(len(values)).(*array.BinaryBuilder).Append([]byte("\xff\xc0\x80"))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r := newFakeResolver()
	addTable(t, r, "default.strs", rec, 3)
	e := newTestEngine(t, r)

	for i, v := range values {
		_, err := tryQuery(e, fmt.Sprintf("SELECT c%d FROM strs", i))
		if valid := utf8.ValidString(v); valid != (err == nil) {
			t.Errorf("%q: valid %v, query error %v", v, valid, err)
		} else if err != nil && !strings.Contains(err.Error(), "invalid UTF-8") {
			t.Errorf("%q: error %v, want one about invalid UTF-8", v, err)
		}
	}
	wantRows(t, query(t, e, "SELECT octet_length(bin) FROM strs LIMIT 1"), "3")

	// Bytes under a null slot are undefined in Arrow: not checked.
	validity := memory.NewBufferBytes([]byte{0b101})
	offsets := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 1, 3, 4}))
	data := memory.NewBufferBytes([]byte("a\xff\xfeb"))
	col := array.NewStringData(array.NewData(arrow.BinaryTypes.String, 3, []*memory.Buffer{validity, offsets, data}, nil, 1, 0))
	defer col.Release()
	nb := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: col.DataType(), Nullable: true}}, nil), []arrow.Array{col}, 3)
	defer nb.Release()
	addTable(t, r, "default.nullbad", nb, 3)
	wantRows(t, query(t, e, "SELECT count(s), count(*), max(s) FROM nullbad"), "2|3|b")
}
