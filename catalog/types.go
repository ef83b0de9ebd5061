package catalog

import (
	"strconv"
	"strings"
)

// Kind is the kind of a SQL type.
type Kind uint8

// The SQL type kinds. The zero Kind is invalid.
const (
	KindBoolean Kind = iota + 1
	KindTinyInt
	KindSmallInt
	KindInteger
	KindBigInt
	KindFloat
	KindDouble
	KindDecimal
	KindVarchar
	KindBlob
	KindDate
	KindTime
	KindTimestamp
	KindTimestampTZ
	KindList
	KindStruct
	KindMap
)

// kindNames are the canonical SQL spellings, used by TypeString.
var kindNames = [...]string{
	KindBoolean:     "BOOLEAN",
	KindTinyInt:     "TINYINT",
	KindSmallInt:    "SMALLINT",
	KindInteger:     "INTEGER",
	KindBigInt:      "BIGINT",
	KindFloat:       "FLOAT",
	KindDouble:      "DOUBLE",
	KindDecimal:     "DECIMAL",
	KindVarchar:     "VARCHAR",
	KindBlob:        "BLOB",
	KindDate:        "DATE",
	KindTime:        "TIME",
	KindTimestamp:   "TIMESTAMP",
	KindTimestampTZ: "TIMESTAMPTZ",
	KindList:        "LIST",
	KindStruct:      "STRUCT",
	KindMap:         "MAP",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Decimal defaults and limits: DECIMAL without arguments is DECIMAL(18,3),
// like DuckDB; 38 digits is what Decimal128 (and Iceberg) can hold.
const (
	DefaultDecimalPrecision = 18
	DefaultDecimalScale     = 3
	MaxDecimalPrecision     = 38
)

// Type is a SQL column type. Primitive types set only Kind (and Precision and
// Scale for DECIMAL); LIST sets Elem, MAP sets Key and Value, STRUCT sets
// Fields. Types are values; treat the pointed-to children as immutable.
type Type struct {
	Kind      Kind
	Precision int           // DECIMAL: total digits, 1..38
	Scale     int           // DECIMAL: digits after the point, 0..Precision
	Elem      *Type         // LIST: element type (elements are nullable)
	Key       *Type         // MAP: key type (keys are never null)
	Value     *Type         // MAP: value type (values are nullable)
	Fields    []StructField // STRUCT: the fields, in order (all nullable)
}

// StructField is one named field of a STRUCT type.
type StructField struct {
	Name string
	Type Type
}

// Prim returns the primitive type of kind k (DECIMAL gets the default
// precision and scale).
func Prim(k Kind) Type {
	if k == KindDecimal {
		return Decimal(DefaultDecimalPrecision, DefaultDecimalScale)
	}
	return Type{Kind: k}
}

// Decimal returns DECIMAL(precision, scale).
func Decimal(precision, scale int) Type {
	return Type{Kind: KindDecimal, Precision: precision, Scale: scale}
}

// ListOf returns the LIST type of elem, spelled elem[].
func ListOf(elem Type) Type { return Type{Kind: KindList, Elem: &elem} }

// MapOf returns MAP(key, value).
func MapOf(key, value Type) Type { return Type{Kind: KindMap, Key: &key, Value: &value} }

// StructOf returns STRUCT(fields...).
func StructOf(fields ...StructField) Type { return Type{Kind: KindStruct, Fields: fields} }

// IsNested reports whether t is a LIST, STRUCT or MAP.
func (t Type) IsNested() bool {
	return t.Kind == KindList || t.Kind == KindStruct || t.Kind == KindMap
}

// String returns TypeString(t).
func (t Type) String() string { return TypeString(t) }

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Precision != u.Precision || t.Scale != u.Scale {
		return false
	}
	switch t.Kind {
	case KindList:
		return t.Elem.Equal(*u.Elem)
	case KindMap:
		return t.Key.Equal(*u.Key) && t.Value.Equal(*u.Value)
	case KindStruct:
		if len(t.Fields) != len(u.Fields) {
			return false
		}
		for i, f := range t.Fields {
			if f.Name != u.Fields[i].Name || !f.Type.Equal(u.Fields[i].Type) {
				return false
			}
		}
	}
	return true
}

// TypeString returns the canonical SQL spelling of t, which ParseType reads
// back to an equal Type: "DECIMAL(18,3)", "BIGINT[]",
// "STRUCT(a INTEGER, b VARCHAR)", "MAP(VARCHAR, DOUBLE)".
func TypeString(t Type) string {
	var b strings.Builder
	writeType(&b, t)
	return b.String()
}

func writeType(b *strings.Builder, t Type) {
	switch t.Kind {
	case KindDecimal:
		b.WriteString("DECIMAL(" + strconv.Itoa(t.Precision) + "," + strconv.Itoa(t.Scale) + ")")
	case KindList:
		writeType(b, *t.Elem)
		b.WriteString("[]")
	case KindMap:
		b.WriteString("MAP(")
		writeType(b, *t.Key)
		b.WriteString(", ")
		writeType(b, *t.Value)
		b.WriteString(")")
	case KindStruct:
		b.WriteString("STRUCT(")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(QuoteIdent(f.Name) + " ")
			writeType(b, f.Type)
		}
		b.WriteString(")")
	default:
		b.WriteString(t.Kind.String())
	}
}

// QuoteIdent returns name as it must be written in DDL: bare when it is a
// plain lower-case identifier that is not a DDL keyword, else double-quoted
// with embedded quotes doubled.
func QuoteIdent(name string) string {
	if isPlainIdent(name) && !ddlKeywords[name] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func isPlainIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		lower := c >= 'a' && c <= 'z' || c == '_'
		if !lower && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// ddlKeywords are quoted by QuoteIdent so that generated DDL never reads as
// a keyword where a name is meant.
var ddlKeywords = map[string]bool{
	"primary": true, "key": true, "not": true, "null": true, "with": true,
	"partitioned": true, "by": true, "constraint": true, "create": true,
	"table": true, "drop": true, "alter": true, "add": true, "column": true,
}
