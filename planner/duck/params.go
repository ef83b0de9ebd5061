package duck

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// bindArgs binds positional parameters ($1 is args[0]). Accepted Go types:
// nil, bool, signed and unsigned integers, float32/64, string, []byte,
// time.Time, and Arrow scalars (scalar.Scalar), which bind with the DuckDB
// type of their Arrow type (params_arrow.go). DuckDB casts each value to the type it inferred for the
// parameter, so an int64 binds to an INTEGER parameter and a string to a
// DATE one; time.Time binds as TIMESTAMPTZ, or as TIMESTAMP (its UTC wall
// clock) where DuckDB expects a TIMESTAMP.
func bindArgs(stmt bindings.PreparedStatement, args []any) error {
	if n := int(bindings.NParams(stmt)); n != len(args) {
		return &ParamError{Msg: fmt.Sprintf("the statement has %d parameters, %d were bound", n, len(args))}
	}
	for i, a := range args {
		idx := bindings.IdxT(i + 1)
		state, err := bindArg(stmt, idx, a)
		if err != nil {
			return &ParamError{Index: i + 1, Msg: err.Error()}
		}
		if state == bindings.StateError {
			return &ParamError{Index: i + 1, Msg: fmt.Sprintf("cannot bind a %s", argType(a))}
		}
	}
	return nil
}

func bindArg(stmt bindings.PreparedStatement, idx bindings.IdxT, a any) (bindings.State, error) {
	switch v := a.(type) {
	case nil:
		return bindings.BindNull(stmt, idx), nil
	case scalar.Scalar:
		return bindScalar(stmt, idx, v)
	case bool:
		return bindings.BindBoolean(stmt, idx, v), nil
	case int:
		return bindings.BindInt64(stmt, idx, int64(v)), nil
	case int8:
		return bindings.BindInt64(stmt, idx, int64(v)), nil
	case int16:
		return bindings.BindInt64(stmt, idx, int64(v)), nil
	case int32:
		return bindings.BindInt64(stmt, idx, int64(v)), nil
	case int64:
		return bindings.BindInt64(stmt, idx, v), nil
	case uint:
		return bindings.BindUInt64(stmt, idx, uint64(v)), nil
	case uint8:
		return bindings.BindUInt64(stmt, idx, uint64(v)), nil
	case uint16:
		return bindings.BindUInt64(stmt, idx, uint64(v)), nil
	case uint32:
		return bindings.BindUInt64(stmt, idx, uint64(v)), nil
	case uint64:
		return bindings.BindUInt64(stmt, idx, v), nil
	case float32:
		return bindings.BindFloat(stmt, idx, v), nil
	case float64:
		return bindings.BindDouble(stmt, idx, v), nil
	case string:
		return bindings.BindVarchar(stmt, idx, v), nil
	case []byte:
		return bindings.BindBlob(stmt, idx, v), nil
	case time.Time:
		ts := bindings.NewTimestamp(v.UnixMicro())
		if bindings.ParamType(stmt, idx) == bindings.TypeTimestamp {
			return bindings.BindTimestamp(stmt, idx, ts), nil
		}
		return bindings.BindTimestampTZ(stmt, idx, ts), nil
	}
	return bindings.StateError, fmt.Errorf("unsupported Go type %T", a)
}

// argType names the type of a parameter value for an error.
func argType(a any) string {
	if sc, ok := a.(scalar.Scalar); ok {
		return sc.DataType().String() + " value"
	}
	return fmt.Sprintf("%T", a)
}
