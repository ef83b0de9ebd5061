package tables_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakestream/lakestream/internal/vfs"
	"github.com/lakestream/lakestream/tables"
)

// Every Arrow layout of a column's values is accepted and stored as the
// table's type: views, large types, dictionaries, extension types and
// other list layouts.
func TestConformEncodings(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE enc (s VARCHAR, b BLOB, l BIGINT[])")
	tbl := e.table("enc")
	mem := e.mem
	build := func(typ arrow.DataType, json string) arrow.Array {
		arr, _, err := array.FromJSON(mem, typ, strings.NewReader(json))
		if err != nil {
			t.Fatal(err)
		}
		return arr
	}
	want := []string{"a|YQ==|[1,2]", "(null)|(null)|(null)", "c|Yw==|[3,4]"}
	strs := `["a", null, "c"]`
	bins := `["YQ==", null, "Yw=="]`
	lists := `[[1, 2], null, [3, 4]]`
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	dict := build(arrow.BinaryTypes.String, `["c", "a"]`)
	defer dict.Release()
	idx := build(arrow.PrimitiveTypes.Int8, `[1, null, 0]`)
	defer idx.Release()
	dictArr := array.NewDictionaryArray(dictType, idx, dict)
	defer dictArr.Release()
	for _, tc := range []struct {
		name    string
		s, b, l arrow.Array
	}{
		{"views", build(arrow.BinaryTypes.StringView, strs), build(arrow.BinaryTypes.BinaryView, bins), build(arrow.ListOf(arrow.PrimitiveTypes.Int64), lists)},
		{"large", build(arrow.BinaryTypes.LargeString, strs), build(arrow.BinaryTypes.LargeBinary, bins), build(arrow.LargeListOf(arrow.PrimitiveTypes.Int64), lists)},
		{"dictionary, fixed size list", retained(dictArr), build(arrow.BinaryTypes.Binary, bins), build(arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64), lists)},
		{"list of views", build(arrow.BinaryTypes.String, strs), build(arrow.BinaryTypes.Binary, bins), build(arrow.ListOf(arrow.PrimitiveTypes.Int64), lists)},
	} {
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{
			{Name: "s", Type: tc.s.DataType(), Nullable: true},
			{Name: "b", Type: tc.b.DataType(), Nullable: true},
			{Name: "l", Type: tc.l.DataType(), Nullable: true},
		}, nil), []arrow.Array{tc.s, tc.b, tc.l}, 3)
		tc.s.Release()
		tc.b.Release()
		tc.l.Release()
		out, err := tbl.Conform(rec)
		rec.Release()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !out.Schema().Equal(tbl.Schema()) {
			t.Errorf("%s: schema %v", tc.name, out.Schema())
		}
		sameRows(t, tc.name, rowStrings(out), want)
		out.Release()
	}
}

func retained(a arrow.Array) arrow.Array { a.Retain(); return a }

// An extension column is stored as its storage type; a dictionary index
// outside its dictionary, a union and a run-end encoded column are refused
// naming the column.
func TestConformExtensionsAndRefusals(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	e.mustExec("CREATE TABLE ext (u BLOB)")
	tbl := e.table("ext")
	mem := e.mem
	ub := extensions.NewUUIDBuilder(mem)
	ub.AppendNull()
	ub.Append([16]byte{1})
	uuids := ub.NewArray()
	ub.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "u", Type: uuids.DataType(), Nullable: true}}, nil), []arrow.Array{uuids}, 2)
	uuids.Release()
	out, err := tbl.Conform(rec)
	rec.Release()
	if err != nil {
		t.Fatalf("uuid extension: %v", err)
	}
	if n := out.Column(0).(*array.Binary).ValueLen(1); n != 16 {
		t.Errorf("uuid stored as %d bytes, want 16", n)
	}
	out.Release()

	ree := refusal(t, mem, func() arrow.Array {
		b := array.NewRunEndEncodedBuilder(mem, arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Append(2)
		b.ValueBuilder().(*array.BinaryBuilder).Append([]byte("x"))
		return b.NewArray()
	})
	for _, arr := range []arrow.Array{ree} {
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "u", Type: arr.DataType(), Nullable: true}}, nil), []arrow.Array{arr}, int64(arr.Len()))
		arr.Release()
		_, err := tbl.Conform(rec)
		rec.Release()
		var se *tables.SchemaError
		if !errors.As(err, &se) || se.Column != "u" {
			t.Errorf("%s: %v, want a SchemaError naming column u", rec.Schema().Field(0).Type, err)
		}
	}
}

func refusal(t *testing.T, mem memory.Allocator, mk func() arrow.Array) arrow.Array { return mk() }
