package duck

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/scalar"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// conversionError names the parameters behind a DuckDB conversion error:
// a value bound to a parameter whose type DuckDB inferred is cast when the
// statement runs ('abc' bound to WHERE id = ?), and DuckDB's message names
// the value and the type but not the parameter. The parameters that
// needed a cast are the candidates; nil when the failure is not a
// conversion of a bound value.
func conversionError(stmt bindings.PreparedStatement, args []any, msg string) error {
	msg = strings.TrimSpace(msg)
	if len(args) == 0 || !strings.HasPrefix(msg, "Conversion Error") {
		return nil
	}
	var cast []string
	first := 0
	for i, a := range args {
		if needsCast(stmt, bindings.IdxT(i+1), a) {
			if first == 0 {
				first = i + 1
			}
			cast = append(cast, fmt.Sprint(i+1))
		}
	}
	switch len(cast) {
	case 0:
		return nil
	case 1:
		return &ParamError{Index: first, Msg: fmt.Sprintf("the %s cannot be converted to the parameter's type: %s", argType(args[first-1]), msg)}
	}
	return &ParamError{Msg: fmt.Sprintf("one of parameters %s cannot be converted to its parameter's type: %s", strings.Join(cast, ", "), msg)}
}

// needsCast reports whether a, bound to parameter idx, is cast to a type
// DuckDB inferred for the parameter.
func needsCast(stmt bindings.PreparedStatement, idx bindings.IdxT, a any) bool {
	switch pt := bindings.ParamType(stmt, idx); pt {
	case bindings.TypeInvalid, bindings.TypeAny, bindings.TypeSQLNull:
		return false // typed from the value
	default:
		sc, ok := a.(scalar.Scalar)
		if !ok {
			return a != nil
		}
		if !sc.IsValid() {
			return false
		}
		id, ok := primitiveType(sc.DataType())
		return !ok || id != pt
	}
}
