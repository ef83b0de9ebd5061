package duck

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Typed parameters: an Arrow scalar binds as the DuckDB value of its Arrow
// type (the mapping of types.go), so that a parameter has the type the
// client sent, as in DuckDB's own clients: int64 41 is BIGINT 41, int8 is
// TINYINT, utf8 is VARCHAR, timestamp[us, tz] is TIMESTAMPTZ. DuckDB casts a
// value to the type it inferred for the parameter where it inferred one
// (WHERE id = ?), and types the expression from the value where it did not
// (SELECT ? + 1).
//
//	bool                      BOOLEAN
//	int8..int64, uint8..uint64 TINYINT..BIGINT, UTINYINT..UBIGINT
//	float16/32/64             FLOAT (float16 widened) / DOUBLE
//	decimal128(p<=38,s)       DECIMAL(p,s)
//	utf8, large_utf8          VARCHAR
//	binary, large_binary,
//	fixed_size_binary         BLOB
//	date32, date64            DATE
//	time32, time64            TIME (time64[ns] truncates to microseconds only if exact)
//	timestamp[s|ms|us]        TIMESTAMP (TIMESTAMPTZ with a time zone)
//	timestamp[ns]             TIMESTAMP_NS; with a time zone TIMESTAMPTZ if a whole microsecond
//	month_day_nano, duration  INTERVAL
//	list, large_list,
//	fixed_size_list           LIST
//	struct                    STRUCT
//	null                      NULL
//
// View, dictionary and extension arrays are the caller's to turn into
// scalars of these types (their values, decoded). Other types (unions,
// maps, run-end encoded) are refused with a *ParamError.

// ParamError is a parameter that cannot be bound: the wrong number of
// parameters, or a value of a type DuckDB has no value for. It is the
// client's to fix.
type ParamError struct {
	Index int // 1-based; 0 for the parameter count
	Msg   string
}

func (e *ParamError) Error() string {
	if e.Index == 0 {
		return "parameters: " + e.Msg
	}
	return fmt.Sprintf("parameter %d: %s", e.Index, e.Msg)
}

// bindScalar binds one Arrow scalar.
func bindScalar(stmt bindings.PreparedStatement, idx bindings.IdxT, sc scalar.Scalar) (bindings.State, error) {
	if sc == nil || !sc.IsValid() {
		return bindings.BindNull(stmt, idx), nil
	}
	v, err := duckValue(sc)
	if err != nil {
		return bindings.StateError, err
	}
	defer bindings.DestroyValue(&v)
	return bindings.BindValue(stmt, idx, v), nil
}

// duckValue is the DuckDB value of an Arrow scalar. The caller destroys it.
func duckValue(sc scalar.Scalar) (bindings.Value, error) {
	if !sc.IsValid() {
		return bindings.CreateNullValue(), nil
	}
	switch v := sc.(type) {
	case *scalar.Boolean:
		return bindings.CreateBool(v.Value), nil
	case *scalar.Int8:
		return bindings.CreateInt8(v.Value), nil
	case *scalar.Int16:
		return bindings.CreateInt16(v.Value), nil
	case *scalar.Int32:
		return bindings.CreateInt32(v.Value), nil
	case *scalar.Int64:
		return bindings.CreateInt64(v.Value), nil
	case *scalar.Uint8:
		return bindings.CreateUInt8(v.Value), nil
	case *scalar.Uint16:
		return bindings.CreateUInt16(v.Value), nil
	case *scalar.Uint32:
		return bindings.CreateUInt32(v.Value), nil
	case *scalar.Uint64:
		return bindings.CreateUInt64(v.Value), nil
	case *scalar.Float16:
		return bindings.CreateFloat(v.Value.Float32()), nil
	case *scalar.Float32:
		return bindings.CreateFloat(v.Value), nil
	case *scalar.Float64:
		return bindings.CreateDouble(v.Value), nil
	case *scalar.Decimal128:
		return decimalValue(v)
	case *scalar.String, *scalar.LargeString:
		return bindings.CreateVarchar(string(sc.(scalar.BinaryScalar).Data())), nil
	case *scalar.Binary, *scalar.LargeBinary, *scalar.FixedSizeBinary:
		return bindings.CreateBlob(sc.(scalar.BinaryScalar).Data()), nil
	case *scalar.Date32:
		return bindings.CreateDate(bindings.NewDate(int32(v.Value))), nil
	case *scalar.Date64:
		return bindings.CreateDate(bindings.NewDate(int32(int64(v.Value) / 86_400_000))), nil
	case *scalar.Time32:
		return timeValue(int64(v.Value), v.Type.(*arrow.Time32Type).Unit)
	case *scalar.Time64:
		return timeValue(int64(v.Value), v.Type.(*arrow.Time64Type).Unit)
	case *scalar.Timestamp:
		return timestampValue(int64(v.Value), v.Type.(*arrow.TimestampType))
	case *scalar.MonthDayNanoInterval:
		if v.Value.Nanoseconds%1000 != 0 {
			return bindings.Value{}, errors.New("interval has nanoseconds; DuckDB's INTERVAL holds microseconds")
		}
		return bindings.CreateInterval(bindings.NewInterval(v.Value.Months, v.Value.Days, v.Value.Nanoseconds/1000)), nil
	case *scalar.Duration:
		us, ok := toMicros(int64(v.Value), v.Type.(*arrow.DurationType).Unit)
		if !ok {
			return bindings.Value{}, errors.New("duration has nanoseconds; DuckDB's INTERVAL holds microseconds")
		}
		return bindings.CreateInterval(bindings.NewInterval(0, 0, us)), nil
	case *scalar.List:
		return listValue(v.Value, v.Type.(*arrow.ListType).Elem())
	case *scalar.LargeList:
		return listValue(v.Value, v.Type.(*arrow.LargeListType).Elem())
	case *scalar.FixedSizeList:
		return listValue(v.Value, v.Type.(*arrow.FixedSizeListType).Elem())
	case *scalar.Struct:
		return structValue(v)
	}
	return bindings.Value{}, fmt.Errorf("type %s is not supported as a parameter", sc.DataType())
}

func decimalValue(v *scalar.Decimal128) (bindings.Value, error) {
	t := v.Type.(*arrow.Decimal128Type)
	if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
		return bindings.Value{}, fmt.Errorf("type %s is not supported as a parameter (DuckDB's DECIMAL has precision 1 to 38)", t)
	}
	n := decimal128.Num(v.Value)
	hi := bindings.NewHugeInt(n.LowBits(), n.HighBits())
	return bindings.CreateDecimal(bindings.NewDecimal(uint8(t.Precision), uint8(t.Scale), hi)), nil
}

// toMicros converts a count of unit to microseconds; ok is false when a
// nanosecond count is not a whole microsecond or the result overflows.
func toMicros(n int64, unit arrow.TimeUnit) (int64, bool) {
	switch unit {
	case arrow.Second:
		if n > math.MaxInt64/1_000_000 || n < math.MinInt64/1_000_000 {
			return 0, false
		}
		return n * 1_000_000, true
	case arrow.Millisecond:
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		return n * 1000, true
	case arrow.Nanosecond:
		return n / 1000, n%1000 == 0
	}
	return n, true
}

func timeValue(n int64, unit arrow.TimeUnit) (bindings.Value, error) {
	if unit == arrow.Nanosecond {
		return bindings.CreateTimeNS(bindings.NewTimeNS(n)), nil
	}
	us, _ := toMicros(n, unit)
	return bindings.CreateTime(bindings.NewTime(us)), nil
}

func timestampValue(n int64, t *arrow.TimestampType) (bindings.Value, error) {
	if t.Unit == arrow.Nanosecond && t.TimeZone == "" {
		return bindings.CreateTimestampNS(bindings.NewTimestampNS(n)), nil
	}
	us, ok := toMicros(n, t.Unit)
	if !ok {
		return bindings.Value{}, fmt.Errorf("%s value %d is not a whole microsecond or out of range; DuckDB's TIMESTAMPTZ holds microseconds", t, n)
	}
	if t.TimeZone != "" {
		return bindings.CreateTimestampTZ(bindings.NewTimestamp(us)), nil
	}
	return bindings.CreateTimestamp(bindings.NewTimestamp(us)), nil
}

// listValue is a LIST of the elements of arr, typed as elem.
func listValue(arr arrow.Array, elem arrow.DataType) (bindings.Value, error) {
	lt, err := logicalType(elem)
	if err != nil {
		return bindings.Value{}, fmt.Errorf("list of %s is not supported as a parameter", elem)
	}
	defer bindings.DestroyLogicalType(&lt)
	vals := make([]bindings.Value, 0, arr.Len())
	defer func() { destroyValues(vals) }()
	for i := 0; i < arr.Len(); i++ {
		sc, err := scalar.GetScalar(arr, i)
		if err != nil {
			return bindings.Value{}, err
		}
		v, err := duckValue(sc)
		if err != nil {
			return bindings.Value{}, err
		}
		vals = append(vals, v)
	}
	return bindings.CreateListValue(lt, vals), nil
}

func structValue(v *scalar.Struct) (bindings.Value, error) {
	lt, err := logicalType(v.Type)
	if err != nil {
		return bindings.Value{}, fmt.Errorf("type %s is not supported as a parameter", v.Type)
	}
	defer bindings.DestroyLogicalType(&lt)
	vals := make([]bindings.Value, 0, len(v.Value))
	defer func() { destroyValues(vals) }()
	for _, f := range v.Value {
		fv, err := duckValue(f)
		if err != nil {
			return bindings.Value{}, err
		}
		vals = append(vals, fv)
	}
	return bindings.CreateStructValue(lt, vals), nil
}

func destroyValues(vals []bindings.Value) {
	for i := range vals {
		bindings.DestroyValue(&vals[i])
	}
}

func isParamError(err error) bool {
	var pe *ParamError
	return errors.As(err, &pe)
}
