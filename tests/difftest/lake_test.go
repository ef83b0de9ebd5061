package difftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/planner/duck"
)

// lakeQuery runs a query through Lakestream's engine and reads the whole
// Arrow result into the canonical form.
func lakeQuery(ctx context.Context, e *duck.Engine, sql string, args []any) (*result, error) {
	rs, schema, err := e.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := &result{}
	for _, f := range schema.Fields() {
		out.names = append(out.names, f.Name)
		out.types = append(out.types, typeNameOfArrow(f.Type))
	}
	for {
		rec, err := rs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !rec.Schema().Equal(schema) {
			rec.Release()
			return nil, fmt.Errorf("record schema %s differs from the result schema %s", rec.Schema(), schema)
		}
		for row := range int(rec.NumRows()) {
			vals := make([]any, rec.NumCols())
			for i, col := range rec.Columns() {
				vals[i] = arrowValue(col, row)
			}
			out.addRow(vals)
		}
		rec.Release()
	}
	return out, rs.Close()
}

// typeNameOfArrow names an Arrow result type by the DuckDB type that DuckDB's
// Arrow export maps to it (planner/duck/result.go), so that it can be
// compared with the reference's own column types.
func typeNameOfArrow(t arrow.DataType) string {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN"
	case *arrow.Int8Type:
		return "TINYINT"
	case *arrow.Int16Type:
		return "SMALLINT"
	case *arrow.Int32Type:
		return "INTEGER"
	case *arrow.Int64Type:
		return "BIGINT"
	case *arrow.Uint8Type:
		return "UTINYINT"
	case *arrow.Uint16Type:
		return "USMALLINT"
	case *arrow.Uint32Type:
		return "UINTEGER"
	case *arrow.Uint64Type:
		return "UBIGINT"
	case *arrow.Float32Type:
		return "FLOAT"
	case *arrow.Float64Type:
		return "DOUBLE"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "VARCHAR"
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return "BLOB"
	case *arrow.Date32Type:
		return "DATE"
	case *arrow.Time64Type:
		if t.Unit == arrow.Microsecond {
			return "TIME"
		}
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			if t.Unit == arrow.Microsecond {
				return "TIMESTAMPTZ"
			}
			return "TIMESTAMPTZ[" + t.Unit.String() + "]"
		}
		return map[arrow.TimeUnit]string{arrow.Second: "TIMESTAMP_S", arrow.Millisecond: "TIMESTAMP_MS",
			arrow.Microsecond: "TIMESTAMP", arrow.Nanosecond: "TIMESTAMP_NS"}[t.Unit]
	case *arrow.MonthDayNanoIntervalType:
		return "INTERVAL"
	case *arrow.NullType:
		return "NULL"
	case *arrow.ListType:
		return typeNameOfArrow(t.Elem()) + "[]"
	case *arrow.LargeListType:
		return typeNameOfArrow(t.Elem()) + "[]"
	case *arrow.FixedSizeListType:
		return fmt.Sprintf("%s[%d]", typeNameOfArrow(t.Elem()), t.Len())
	case *arrow.MapType:
		return fmt.Sprintf("MAP(%s, %s)", typeNameOfArrow(t.KeyType()), typeNameOfArrow(t.ItemType()))
	case *arrow.StructType:
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			parts[i] = fmt.Sprintf("%q %s", f.Name, typeNameOfArrow(f.Type))
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	}
	return "arrow:" + t.String()
}

// arrowValue reads row i of an Arrow array into the canonical Go values.
// It is a dispatcher on the array type.
func arrowValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return intOf(int64(a.Value(i)))
	case *array.Int16:
		return intOf(int64(a.Value(i)))
	case *array.Int32:
		return intOf(int64(a.Value(i)))
	case *array.Int64:
		return intOf(a.Value(i))
	case *array.Uint8:
		return uintOf(uint64(a.Value(i)))
	case *array.Uint16:
		return uintOf(uint64(a.Value(i)))
	case *array.Uint32:
		return uintOf(uint64(a.Value(i)))
	case *array.Uint64:
		return uintOf(a.Value(i))
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Decimal128:
		return decValOf(a.Value(i), int(a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return append([]byte{}, a.Value(i)...)
	case *array.Date32:
		return dateVal(a.Value(i))
	case *array.Time64:
		return timeVal(a.Value(i))
	case *array.Timestamp:
		perSec := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}
		return tsFrom(int64(a.Value(i)), perSec[a.DataType().(*arrow.TimestampType).Unit])
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		return intervalVal{months: v.Months, days: v.Days, nanos: v.Nanoseconds}
	case *array.Null:
		return nil
	case *array.Map:
		return arrowMap(a, i)
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		list := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			list = append(list, arrowValue(vals, int(j)))
		}
		return list
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		sv := structVal{names: make([]string, a.NumField()), vals: make([]any, a.NumField())}
		for f := range a.NumField() {
			sv.names[f] = st.Field(f).Name
			sv.vals[f] = arrowValue(a.Field(f), i)
		}
		return sv
	case *array.Dictionary:
		return arrowValue(a.Dictionary(), a.GetValueIndex(i))
	}
	panic(fmt.Sprintf("difftest: no reader for Arrow type %s", arr.DataType()))
}

func arrowMap(a *array.Map, i int) mapVal {
	start, end := a.ValueOffsets(i)
	m := mapVal{}
	for j := start; j < end; j++ {
		m.keys = append(m.keys, arrowValue(a.Keys(), int(j)))
		m.vals = append(m.vals, arrowValue(a.Items(), int(j)))
	}
	return m
}

func decValOf(n decimal128.Num, scale int) decVal {
	return decVal{hi: n.HighBits(), lo: n.LowBits(), scale: scale}
}
