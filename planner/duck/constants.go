package duck

import (
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/lakestream/lakestream/planner"
)

// Constants of DuckDB's parse tree (json_serialize_sql), as filter pushdown
// reads them: VALUE_CONSTANT nodes, and casts of them that are typed
// literals. They become planner.Const, which planner's literal rules
// (planner/literal.go) convert to the values of a column.

// stringCasts are the casts of a string constant that are typed literals
// (DATE '2025-01-01' is CAST('2025-01-01' AS DATE) in the tree), by
// DuckDB's type id; BOOLEAN is read at once.
var stringCasts = map[string]planner.StringType{
	"VARCHAR": planner.AsVarchar, "BLOB": planner.AsBlob, "DATE": planner.AsDate, "TIME": planner.AsTime,
	"TIMESTAMP": planner.AsTimestamp, "TIMESTAMP WITH TIME ZONE": planner.AsTimestampTZ,
}

// intCasts bound the integers CAST(n AS type) keeps unchanged.
var intCasts = map[string]int{"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64, "HUGEINT": 128}

// parseConstant reads a VALUE_CONSTANT, or a cast of one that is a typed
// literal.
func parseConstant(e any) (planner.Const, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return planner.Const{}, false
	}
	switch m["type"] {
	case "VALUE_CONSTANT":
		return parseValue(m["value"])
	case "OPERATOR_CAST":
		if try, _ := m["try_cast"].(bool); try {
			return planner.Const{}, false
		}
		ct, _ := m["cast_type"].(map[string]any)
		if ct["type_info"] != nil {
			return planner.Const{}, false
		}
		id, _ := ct["id"].(string)
		child, ok := parseConstantValue(m["child"])
		if !ok {
			return planner.Const{}, false
		}
		return castConstant(child, id)
	}
	return planner.Const{}, false
}

// parseConstantValue is parseConstant of a VALUE_CONSTANT only: casts of
// casts are not literals.
func parseConstantValue(e any) (planner.Const, bool) {
	m, ok := e.(map[string]any)
	if !ok || m["type"] != "VALUE_CONSTANT" {
		return planner.Const{}, false
	}
	return parseValue(m["value"])
}

func castConstant(c planner.Const, id string) (planner.Const, bool) {
	switch {
	case c.Kind == planner.ConstString && c.As == planner.AsColumn && id == "BOOLEAN":
		b, ok := planner.ParseBool(c.Str)
		return planner.Const{Kind: planner.ConstBool, Bool: b}, ok
	case c.Kind == planner.ConstString && c.As == planner.AsColumn && stringCasts[id] != "":
		c.As = stringCasts[id]
		return c, true
	case c.Kind == planner.ConstExact && intCasts[id] > 0:
		// DuckDB rounds a decimal cast to an integer: only whole numbers
		// are kept as they are.
		if !c.Exact.IsInt() || c.Exact.Num().BitLen() >= intCasts[id] {
			return planner.Const{}, false
		}
		return c, true
	case c.Kind == planner.ConstExact && id == "DOUBLE":
		f, _ := c.Exact.Float64()
		return planner.Const{Kind: planner.ConstDouble, Double: f}, true
	case c.Kind == planner.ConstDouble && id == "DOUBLE":
		return c, true
	}
	return planner.Const{}, false
}

// parseValue reads a serialised DuckDB Value: {"type": {"id": ...},
// "is_null": ..., "value": ...}.
func parseValue(v any) (planner.Const, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return planner.Const{}, false
	}
	if isNull, _ := m["is_null"].(bool); isNull {
		return planner.Const{}, false
	}
	t, _ := m["type"].(map[string]any)
	id, _ := t["id"].(string)
	switch id {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
		"HUGEINT", "UHUGEINT":
		n, ok := parseInteger(m["value"], id == "UHUGEINT")
		return exact(n, 0), ok
	case "DECIMAL":
		info, _ := t["type_info"].(map[string]any)
		scale, err := jsonInt(info["scale"])
		if err != nil || scale < 0 || scale > 38 {
			return planner.Const{}, false
		}
		n, ok := parseInteger(m["value"], false)
		return exact(n, int32(scale)), ok
	case "DOUBLE":
		num, ok := m["value"].(json.Number)
		if !ok {
			return planner.Const{}, false
		}
		f, err := num.Float64()
		return planner.Const{Kind: planner.ConstDouble, Double: f}, err == nil
	case "VARCHAR":
		s, ok := m["value"].(string)
		return planner.Const{Kind: planner.ConstString, Str: s}, ok
	case "BOOLEAN":
		b, ok := m["value"].(bool)
		return planner.Const{Kind: planner.ConstBool, Bool: b}, ok
	}
	return planner.Const{}, false
}

// exact is the constant n / 10^scale; nil n is no constant.
func exact(n *big.Int, scale int32) planner.Const {
	if n == nil {
		return planner.Const{}
	}
	r := new(big.Rat).SetInt(n)
	if scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(planner.Pow10(scale)))
	}
	return planner.Const{Kind: planner.ConstExact, Exact: r}
}

// parseInteger reads an integer value: a JSON number, or a 128-bit
// {"upper": int64, "lower": uint64} (uhugeint: upper unsigned).
func parseInteger(v any, unsignedUpper bool) (*big.Int, bool) {
	switch v := v.(type) {
	case json.Number:
		n, ok := new(big.Int).SetString(string(v), 10)
		return n, ok
	case map[string]any:
		up, ok1 := v["upper"].(json.Number)
		lo, ok2 := v["lower"].(json.Number)
		if !ok1 || !ok2 {
			return nil, false
		}
		u, ok1 := new(big.Int).SetString(string(up), 10)
		l, ok2 := new(big.Int).SetString(string(lo), 10)
		if !ok1 || !ok2 || l.Sign() < 0 || l.BitLen() > 64 || (unsignedUpper && u.Sign() < 0) {
			return nil, false
		}
		return u.Lsh(u, 64).Add(u, l), true
	}
	return nil, false
}

func jsonInt(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number: %v", v)
	}
	return n.Int64()
}
