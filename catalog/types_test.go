package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// typeMapping is the mapping table of types_arrow.go, walked both ways.
var typeMapping = []struct {
	sql   string // canonical spelling
	arrow arrow.DataType
}{
	{"BOOLEAN", arrow.FixedWidthTypes.Boolean},
	{"TINYINT", arrow.PrimitiveTypes.Int8},
	{"SMALLINT", arrow.PrimitiveTypes.Int16},
	{"INTEGER", arrow.PrimitiveTypes.Int32},
	{"BIGINT", arrow.PrimitiveTypes.Int64},
	{"FLOAT", arrow.PrimitiveTypes.Float32},
	{"DOUBLE", arrow.PrimitiveTypes.Float64},
	{"DECIMAL(18,3)", &arrow.Decimal128Type{Precision: 18, Scale: 3}},
	{"DECIMAL(38,0)", &arrow.Decimal128Type{Precision: 38, Scale: 0}},
	{"VARCHAR", arrow.BinaryTypes.String},
	{"BLOB", arrow.BinaryTypes.Binary},
	{"DATE", arrow.FixedWidthTypes.Date32},
	{"TIME", arrow.FixedWidthTypes.Time64us},
	{"TIMESTAMP", &arrow.TimestampType{Unit: arrow.Microsecond}},
	{"TIMESTAMPTZ", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{"BIGINT[]", arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
	{"VARCHAR[][]", arrow.ListOfField(arrow.Field{Name: "element", Nullable: true,
		Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true})})},
	{"STRUCT(a INTEGER, b VARCHAR)", arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})},
	{`STRUCT("Key" DOUBLE, "a b" DATE[])`, arrow.StructOf(
		arrow.Field{Name: "Key", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "a b", Nullable: true, Type: arrow.ListOfField(
			arrow.Field{Name: "element", Type: arrow.FixedWidthTypes.Date32, Nullable: true})})},
	{"MAP(VARCHAR, BIGINT)", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
	{"MAP(INTEGER, STRUCT(x DOUBLE))[]", arrow.ListOfField(arrow.Field{Name: "element", Nullable: true,
		Type: arrow.MapOf(arrow.PrimitiveTypes.Int32,
			arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}))})},
}

func TestTypeMappingBothWays(t *testing.T) {
	for _, m := range typeMapping {
		typ, err := ParseType(m.sql)
		if err != nil {
			t.Errorf("ParseType(%q): %v", m.sql, err)
			continue
		}
		if got := TypeString(typ); got != m.sql {
			t.Errorf("TypeString(ParseType(%q)) = %q", m.sql, got)
		}
		if got := ArrowType(typ); !arrow.TypeEqual(got, m.arrow) {
			t.Errorf("ArrowType(%s) = %s, want %s", m.sql, got, m.arrow)
		}
		back, err := TypeFromArrow(m.arrow)
		if err != nil {
			t.Errorf("TypeFromArrow(%s): %v", m.arrow, err)
			continue
		}
		if !back.Equal(typ) {
			t.Errorf("TypeFromArrow(%s) = %s, want %s", m.arrow, back, m.sql)
		}
	}
}

func TestMapKeysNotNull(t *testing.T) {
	mt := ArrowType(MapOf(Prim(KindVarchar), Prim(KindBigInt))).(*arrow.MapType)
	if mt.KeyField().Nullable || !mt.ItemField().Nullable {
		t.Errorf("map key nullable %v, item nullable %v; want false, true", mt.KeyField().Nullable, mt.ItemField().Nullable)
	}
}

func TestParseTypeAliases(t *testing.T) {
	aliases := map[string]string{
		"bool": "BOOLEAN", "Boolean": "BOOLEAN", "int1": "TINYINT", "int2": "SMALLINT",
		"int": "INTEGER", "INT4": "INTEGER", "int8": "BIGINT", "long": "BIGINT",
		"real": "FLOAT", "float4": "FLOAT", "float8": "DOUBLE", "double precision": "DOUBLE",
		"decimal": "DECIMAL(18,3)", "numeric(10, 2)": "DECIMAL(10,2)", "decimal(5)": "DECIMAL(5,0)",
		"string": "VARCHAR", "text": "VARCHAR", "varchar(255)": "VARCHAR",
		"bytea": "BLOB", "binary": "BLOB", "varbinary": "BLOB",
		"timestamp with time zone": "TIMESTAMPTZ", "timestamp without time zone": "TIMESTAMP",
		"list(int)": "INTEGER[]", "LIST(LIST(text))": "VARCHAR[][]", "int[][]": "INTEGER[][]",
		"struct(A int, b map(text, list(real)))": "STRUCT(a INTEGER, b MAP(VARCHAR, FLOAT[]))",
		`struct("primary" int)`:                  `STRUCT("primary" INTEGER)`,
	}
	for in, want := range aliases {
		typ, err := ParseType(in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", in, err)
			continue
		}
		if got := TypeString(typ); got != want {
			t.Errorf("ParseType(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseTypeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"FOO":                            `unknown type "FOO"`,
		"INT INT":                        `expected end of type`,
		"DECIMAL(0)":                     `DECIMAL precision must be 1..38, got 0`,
		"STRUCT()":                       `expected a STRUCT field name`,
		"MAP(INT)":                       `expected ","`,
		"INT[":                           `expected "]"`,
		"VARCHAR(n)":                     `expected a length`,
		"DECIMAL(999999999999999999999)": `a precision is out of range`,
	} {
		_, err := ParseType(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseType(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestTypeFromArrowLenient(t *testing.T) {
	tests := []struct {
		in   arrow.DataType
		want string
	}{
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, "TIMESTAMP"},
		{&arrow.TimestampType{Unit: arrow.Second, TimeZone: "Europe/Paris"}, "TIMESTAMPTZ"},
		{arrow.FixedWidthTypes.Timestamp_ms, "TIMESTAMPTZ"},
		{arrow.BinaryTypes.LargeString, "VARCHAR"},
		{arrow.BinaryTypes.StringView, "VARCHAR"},
		{arrow.BinaryTypes.LargeBinary, "BLOB"},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, "BLOB"},
		{arrow.FixedWidthTypes.Date64, "DATE"},
		{arrow.FixedWidthTypes.Time32ms, "TIME"},
		{arrow.FixedWidthTypes.Time64ns, "TIME"},
		{arrow.FixedWidthTypes.Float16, "FLOAT"},
		{arrow.PrimitiveTypes.Uint8, "SMALLINT"},
		{arrow.PrimitiveTypes.Uint16, "INTEGER"},
		{arrow.PrimitiveTypes.Uint32, "BIGINT"},
		{arrow.PrimitiveTypes.Uint64, "DECIMAL(20,0)"},
		{&arrow.Decimal256Type{Precision: 30, Scale: 4}, "DECIMAL(30,4)"},
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int32), "INTEGER[]"},
		{arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), "FLOAT[]"},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, "VARCHAR"},
	}
	for _, tt := range tests {
		got, err := TypeFromArrow(tt.in)
		if err != nil || TypeString(got) != tt.want {
			t.Errorf("TypeFromArrow(%s) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []arrow.DataType{
		arrow.Null, arrow.FixedWidthTypes.Duration_s, arrow.FixedWidthTypes.MonthInterval,
		&arrow.Decimal256Type{Precision: 60, Scale: 2},
		arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Duration_ms}),
	} {
		if _, err := TypeFromArrow(bad); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("TypeFromArrow(%s) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestColumnsFromArrow(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ns, Nullable: true},
		{Name: "bad1", Type: arrow.Null, Nullable: true},
		{Name: "bad2", Type: arrow.FixedWidthTypes.Duration_s, Nullable: true},
	}, nil)
	cols, err := ColumnsFromArrow(s)
	for _, want := range []string{`column "bad1": unsupported Arrow type null`, `column "bad2": unsupported Arrow type duration`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
	want := []Column{{Name: "id", Type: Prim(KindBigInt), NotNull: true}, {Name: "ts", Type: Prim(KindTimestampTZ)}}
	if len(cols) != 2 || cols[0].Name != want[0].Name || !cols[0].NotNull || cols[1].NotNull || !cols[1].Type.Equal(want[1].Type) {
		t.Errorf("columns = %+v, want %+v", cols, want)
	}
}
