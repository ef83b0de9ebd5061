package flightsrv_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

// polars sends strings as string_view: create and append take them.
func TestIngestViewTypes(t *testing.T) {
	ts := startServer(t, serverConfig{})
	mk := func(from int) arrow.RecordBatch {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.StringView, Nullable: true},
			{Name: "b", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		}, nil)
		b := array.NewRecordBuilder(ts.mem, schema)
		defer b.Release()
		for i := from; i < from+3; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringViewBuilder).Append(strings.Repeat("x", i))
			b.Field(2).(*array.BinaryBuilder).Append([]byte{byte(i)})
		}
		return b.NewRecordBatch()
	}
	if n := ts.mustIngest("pl", "create", mk(10)); n != 3 {
		t.Errorf("create: %d rows", n)
	}
	ts.mustIngest("pl", "append", mk(20))
	info := ts.mustExec("SELECT id, s FROM pl")
	s := info.GetSchema()
	if !strings.Contains(string(s), "s") {
		t.Fatal("no schema")
	}
	sameRows(t, "views", ts.fetch(info), []string{
		"10|" + strings.Repeat("x", 10), "11|" + strings.Repeat("x", 11), "12|" + strings.Repeat("x", 12),
		"20|" + strings.Repeat("x", 20), "21|" + strings.Repeat("x", 21), "22|" + strings.Repeat("x", 22)})
}

// An ingest that creates its table and then fails leaves no table behind,
// in every mode that creates; one into an existing table keeps it.
func TestFailedIngestDropsWhatItCreated(t *testing.T) {
	ts := startServer(t, serverConfig{})
	bad := func() arrow.RecordBatch { // a null in a NOT NULL column, after good rows
		return record(t, ts.mem, i64("id", false, 1, nil), f64("amount", 1.0, 2.0))
	}
	good := func() arrow.RecordBatch { return record(t, ts.mem, i64("id", false, 1, 2), f64("amount", 1.0, 2.0)) }
	for _, mode := range []string{"create", "create_append", "replace"} {
		name := "failed_" + mode
		_, err := ts.ingest(name, mode, good(), bad())
		expectCode(t, err, codes.InvalidArgument, "NOT NULL")
		_, err = ts.exec("SELECT * FROM " + name)
		expectCode(t, err, codes.NotFound)
	}
	ts.mustIngest("kept", "create", good())
	_, err := ts.ingest("kept", "create_append", good(), bad())
	expectCode(t, err, codes.InvalidArgument, "NOT NULL")
	if n := ts.count("kept"); n != 2 {
		t.Errorf("kept has %d rows, want the 2 of its create", n)
	}
}

// A dictionary-encoded column (a pandas categorical) is decoded into the
// table's type, in create and append.
func TestIngestDictionary(t *testing.T) {
	ts := startServer(t, serverConfig{})
	mk := func(idx string) arrow.RecordBatch {
		dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
		values, _, err := array.FromJSON(ts.mem, arrow.BinaryTypes.String, strings.NewReader(`["buy", "view", null]`))
		if err != nil {
			t.Fatal(err)
		}
		defer values.Release()
		indices, _, err := array.FromJSON(ts.mem, arrow.PrimitiveTypes.Int16, strings.NewReader(idx))
		if err != nil {
			t.Fatal(err)
		}
		defer indices.Release()
		d := array.NewDictionaryArray(dictType, indices, values)
		defer d.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "kind", Type: dictType, Nullable: true}}, nil), []arrow.Array{d}, int64(d.Len()))
	}
	ts.mustIngest("cat", "create", mk(`[0, 1, null, 2]`))
	ts.mustIngest("cat", "append", mk(`[1, 1]`))
	sameRows(t, "decoded", ts.fetch(ts.mustExec("SELECT kind FROM cat")), []string{"buy", "view", "(null)", "(null)", "view", "view"})
	info := ts.mustExec("SELECT kind FROM cat")
	if s, _ := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator); !arrow.TypeEqual(s.Field(0).Type, arrow.BinaryTypes.String) {
		t.Errorf("table column %s, want utf8", s.Field(0).Type)
	}
}

// Unions and run-end encoded columns have no table type: a create is
// refused with InvalidArgument naming the column and creates no table; an
// append, whose messages are checked before they are decoded, with
// Unimplemented naming it.
func TestIngestRefusesUnions(t *testing.T) {
	ts := startServer(t, serverConfig{})
	typ := arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, []arrow.UnionTypeCode{0})
	b := array.NewDenseUnionBuilder(ts.mem, typ)
	b.Append(0)
	b.Child(0).(*array.Int64Builder).Append(7)
	u := b.NewArray()
	b.Release()
	defer u.Release()
	rec := func() arrow.RecordBatch {
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "u", Type: typ, Nullable: true}}, nil), []arrow.Array{u}, 1)
	}
	_, err := ts.ingest("un", "create", rec())
	expectCode(t, err, codes.InvalidArgument, `"u"`, "dense_union")
	_, err = ts.exec("SELECT * FROM un")
	expectCode(t, err, codes.NotFound)
	ts.mustExec("CREATE TABLE un (u BIGINT)")
	_, err = ts.ingest("un", "append", rec())
	expectCode(t, err, codes.Unimplemented, `"u"`, "dense_union")
}
