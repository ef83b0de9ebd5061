package duck

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// Constants of DuckDB's parse tree (json_serialize_sql), as filter pushdown
// reads them: VALUE_CONSTANT nodes, and casts of them that are typed
// literals. filtervalues.go converts them to the values of a column.

// constKind is what a constant of the parse tree is.
type constKind uint8

const (
	constNone   constKind = iota
	constNumber           // exact: num / 10^scale; integers and DECIMAL literals
	constFloat            // a DOUBLE
	constString           // a string, cast by DuckDB to as (or to the column's type)
	constBool
)

type constant struct {
	kind  constKind
	num   *big.Int
	scale int32
	f     float64
	s     string
	// as is the type a string is cast to: "" for a bare literal, which
	// DuckDB casts to the column's type.
	as string
	b  bool
}

// stringCasts are the casts of a string constant that are typed literals
// (DATE '2025-01-01' is CAST('2025-01-01' AS DATE) in the tree).
var stringCasts = map[string]bool{
	"VARCHAR": true, "BLOB": true, "BOOLEAN": true, "DATE": true, "TIME": true,
	"TIMESTAMP": true, "TIMESTAMP WITH TIME ZONE": true,
}

// intCasts bound the integers CAST(n AS type) keeps unchanged.
var intCasts = map[string]int{"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64, "HUGEINT": 128}

// parseConstant reads a VALUE_CONSTANT, or a cast of one that is a typed
// literal.
func parseConstant(e any) (constant, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return constant{}, false
	}
	switch m["type"] {
	case "VALUE_CONSTANT":
		return parseValue(m["value"])
	case "OPERATOR_CAST":
		if try, _ := m["try_cast"].(bool); try {
			return constant{}, false
		}
		ct, _ := m["cast_type"].(map[string]any)
		if ct["type_info"] != nil {
			return constant{}, false
		}
		id, _ := ct["id"].(string)
		child, ok := parseConstantValue(m["child"])
		if !ok {
			return constant{}, false
		}
		return castConstant(child, id)
	}
	return constant{}, false
}

// parseConstantValue is parseConstant of a VALUE_CONSTANT only: casts of
// casts are not literals.
func parseConstantValue(e any) (constant, bool) {
	m, ok := e.(map[string]any)
	if !ok || m["type"] != "VALUE_CONSTANT" {
		return constant{}, false
	}
	return parseValue(m["value"])
}

func castConstant(c constant, id string) (constant, bool) {
	switch {
	case c.kind == constString && c.as == "" && stringCasts[id]:
		if id == "BOOLEAN" {
			switch c.s {
			case "t", "true":
				return constant{kind: constBool, b: true}, true
			case "f", "false":
				return constant{kind: constBool}, true
			}
			return constant{}, false
		}
		c.as = id
		return c, true
	case c.kind == constNumber && intCasts[id] > 0:
		// DuckDB rounds a decimal cast to an integer: only whole numbers
		// are kept as they are.
		n, ok := exactInt(c)
		if !ok || n.BitLen() >= intCasts[id] {
			return constant{}, false
		}
		return constant{kind: constNumber, num: n}, true
	case c.kind == constNumber && id == "DOUBLE":
		f, _ := ratOf(c).Float64()
		return constant{kind: constFloat, f: f}, true
	case c.kind == constFloat && id == "DOUBLE":
		return c, true
	}
	return constant{}, false
}

// parseValue reads a serialised DuckDB Value: {"type": {"id": ...},
// "is_null": ..., "value": ...}.
func parseValue(v any) (constant, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return constant{}, false
	}
	if isNull, _ := m["is_null"].(bool); isNull {
		return constant{}, false
	}
	t, _ := m["type"].(map[string]any)
	id, _ := t["id"].(string)
	switch id {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
		"HUGEINT", "UHUGEINT":
		n, ok := parseInteger(m["value"], id == "UHUGEINT")
		return constant{kind: constNumber, num: n}, ok
	case "DECIMAL":
		info, _ := t["type_info"].(map[string]any)
		scale, err := jsonInt(info["scale"])
		if err != nil || scale < 0 || scale > 38 {
			return constant{}, false
		}
		n, ok := parseInteger(m["value"], false)
		return constant{kind: constNumber, num: n, scale: int32(scale)}, ok
	case "DOUBLE":
		num, ok := m["value"].(json.Number)
		if !ok {
			return constant{}, false
		}
		f, err := num.Float64()
		return constant{kind: constFloat, f: f}, err == nil
	case "VARCHAR":
		s, ok := m["value"].(string)
		return constant{kind: constString, s: s}, ok
	case "BOOLEAN":
		b, ok := m["value"].(bool)
		return constant{kind: constBool, b: b}, ok
	}
	return constant{}, false
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
