package duck

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Arrow scalars bind with their own types: the answers are DuckDB's for
// typed parameters, never those of strings.
func TestTypedParams(t *testing.T) {
	e, _, _ := withEvents(t)
	i64 := func(v int64) scalar.Scalar { return scalar.NewInt64Scalar(v) }
	tsType := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	for _, tc := range []struct {
		sql  string
		args []any
		typ  arrow.DataType
		want string
	}{
		{"SELECT ? < ?", []any{i64(9), i64(10)}, arrow.FixedWidthTypes.Boolean, "true"},
		{"SELECT ? AS x", []any{i64(41)}, arrow.PrimitiveTypes.Int64, "41"},
		{"SELECT ? AS x", []any{scalar.NewInt8Scalar(41)}, arrow.PrimitiveTypes.Int8, "41"},
		{"SELECT ? + 1", []any{i64(41)}, arrow.PrimitiveTypes.Int64, "42"},
		{"SELECT greatest(?, ?)", []any{i64(9), i64(10)}, arrow.PrimitiveTypes.Int64, "10"},
		{"SELECT ? AS x", []any{scalar.NewStringScalar("41")}, arrow.BinaryTypes.String, "41"},
		{"SELECT ? AS x", []any{scalar.NewFloat32Scalar(1.5)}, arrow.PrimitiveTypes.Float32, "1.5"},
		{"SELECT ? AS x", []any{scalar.NewDecimal128Scalar(decimal128.FromI64(12345), &arrow.Decimal128Type{Precision: 9, Scale: 2})},
			&arrow.Decimal128Type{Precision: 9, Scale: 2}, "123.45"},
		{"SELECT ? AS x", []any{scalar.NewDate32Scalar(20000)}, arrow.FixedWidthTypes.Date32, "2024-10-04"},
		{"SELECT ? AS x", []any{scalar.NewTimestampScalar(1_700_000_000_000_000, tsType)}, tsType, "2023-11-14T22:13:20Z"},
		{"SELECT count(*) FROM events WHERE id < ?", []any{scalar.NewInt32Scalar(5)}, arrow.PrimitiveTypes.Int64, "5"},
	} {
		got, err := tryQuery(e, tc.sql, tc.args...)
		if err != nil {
			t.Errorf("%s %v: %v", tc.sql, tc.args, err)
			continue
		}
		if typ := got.schema.Field(0).Type; !arrow.TypeEqual(typ, tc.typ) {
			t.Errorf("%s %v: type %s, want %s", tc.sql, tc.args, typ, tc.typ)
		}
		if len(got.rows) != 1 || got.rows[0][0] != tc.want {
			t.Errorf("%s %v: %v, want %s", tc.sql, tc.args, got.rows, tc.want)
		}
		desc, err := e.DescribeBound(context.Background(), tc.sql, tc.args...)
		if err != nil || !desc.Equal(got.schema) {
			t.Errorf("%s: DescribeBound %v (%v), the query streams %v", tc.sql, desc, err, got.schema)
		}
	}
}

// A wrong parameter count or an unbindable value is a *ParamError naming
// the parameter.
func TestParamErrors(t *testing.T) {
	e, _, _ := withEvents(t)
	var pe *ParamError
	_, err := tryQuery(e, "SELECT ? + ?", scalar.NewInt64Scalar(1))
	if !errors.As(err, &pe) || pe.Index != 0 {
		t.Errorf("wrong count: %v, want a *ParamError for the count", err)
	}
	u := scalar.NewDenseUnionScalar(scalar.NewInt64Scalar(1), 0,
		arrow.DenseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, []arrow.UnionTypeCode{0}))
	_, err = tryQuery(e, "SELECT ? + 1, ?", scalar.NewInt64Scalar(1), u)
	if !errors.As(err, &pe) || pe.Index != 2 {
		t.Errorf("union parameter: %v, want a *ParamError for parameter 2", err)
	}
}

// DescribeBound scans no table: the always-false filter empties the plan.
func TestDescribeBoundScansNothing(t *testing.T) {
	e, _, ft := withEvents(t)
	s, err := e.DescribeBound(context.Background(), "SELECT id, ? AS p FROM events WHERE id > ?", scalar.NewStringScalar("x"), scalar.NewInt64Scalar(3))
	if err != nil {
		t.Fatal(err)
	}
	if s.NumFields() != 2 || s.Field(1).Name != "p" || !arrow.TypeEqual(s.Field(1).Type, arrow.BinaryTypes.String) {
		t.Errorf("schema %s", s)
	}
	if o := ft.opened.Load(); o != 0 {
		t.Errorf("describe opened %d parts, want 0", o)
	}
}

// A value DuckDB cannot convert to its parameter's type is a *ParamError
// naming the parameter.
func TestParamConversionError(t *testing.T) {
	e, _, _ := withEvents(t)
	var pe *ParamError
	_, err := tryQuery(e, "SELECT count(*) FROM events WHERE kind = ? AND id = ?", scalar.NewStringScalar("a"), scalar.NewStringScalar("abc"))
	if !errors.As(err, &pe) || pe.Index != 2 || !strings.Contains(err.Error(), "Could not convert string 'abc'") {
		t.Errorf("%v, want a *ParamError for parameter 2 with DuckDB's message", err)
	}
	// The same string where it converts.
	got := query(t, e, "SELECT count(*) FROM events WHERE id = ?", scalar.NewStringScalar("3"))
	wantRows(t, got, "1")
}
