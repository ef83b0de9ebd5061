package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// The type mapping. Each SQL type maps to exactly one Arrow type (ArrowType)
// and one Iceberg type (used by tiering); TypeFromArrow reads the Arrow
// column back, and also accepts the other Arrow types an ingest may carry.
//
//	SQL (aliases)                              Arrow                       Iceberg
//	BOOLEAN (BOOL, LOGICAL)                    Boolean                     boolean
//	TINYINT (INT1)                             Int8                        int
//	SMALLINT (INT2, SHORT)                     Int16                       int
//	INTEGER (INT, INT4, SIGNED)                Int32                       int
//	BIGINT (INT8, LONG)                        Int64                       long
//	FLOAT (REAL, FLOAT4)                       Float32                     float
//	DOUBLE (FLOAT8, DOUBLE PRECISION)          Float64                     double
//	DECIMAL(p,s) (NUMERIC; default 18,3)       Decimal128(p, s)            decimal(p, s)
//	VARCHAR (STRING, TEXT, VARCHAR(n))         String (utf8)               string
//	BLOB (BYTEA, BINARY, VARBINARY)            Binary                      binary
//	DATE                                       Date32                      date
//	TIME                                       Time64(us)                  time
//	TIMESTAMP                                  Timestamp(us)               timestamp
//	TIMESTAMPTZ (TIMESTAMP WITH TIME ZONE)     Timestamp(us, "UTC")        timestamptz
//	T[] (LIST(T))                              List<element: T nullable>   list<T>
//	STRUCT(a T, ...)                           Struct<a: T nullable, ...>  struct<...>
//	MAP(K, V)                                  Map<K not null, V nullable> map<K, V>
//
// Accepted on the way in only (TypeFromArrow), the ingest casts the data:
//
//	Uint8 -> SMALLINT, Uint16 -> INTEGER, Uint32 -> BIGINT, Uint64 -> DECIMAL(20,0)
//	Float16 -> FLOAT; Decimal32/64/256 with precision <= 38 -> DECIMAL(p,s)
//	LargeString, StringView -> VARCHAR; LargeBinary, BinaryView, FixedSizeBinary -> BLOB
//	Date64 -> DATE; Time32/Time64 of any unit -> TIME
//	Timestamp of any unit -> TIMESTAMP without a time zone, TIMESTAMPTZ with any
//	LargeList, FixedSizeList, ListView, LargeListView -> LIST; Dictionary -> its value type
//
// Refused: Null, Duration, Interval, unions, run-end encoded and extension
// types, and decimals wider than 38 digits.

// ArrowType returns the Arrow type that stores t.
func ArrowType(t Type) arrow.DataType {
	if dt, ok := primitiveArrow(t); ok {
		return dt
	}
	switch t.Kind {
	case KindList:
		return arrow.ListOfField(arrow.Field{Name: "element", Type: ArrowType(*t.Elem), Nullable: true})
	case KindMap:
		return arrow.MapOf(ArrowType(*t.Key), ArrowType(*t.Value))
	case KindStruct:
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = arrow.Field{Name: f.Name, Type: ArrowType(f.Type), Nullable: true}
		}
		return arrow.StructOf(fields...)
	}
	panic(fmt.Sprintf("catalog: ArrowType of invalid type kind %v", t.Kind))
}

func primitiveArrow(t Type) (arrow.DataType, bool) {
	switch t.Kind {
	case KindBoolean:
		return arrow.FixedWidthTypes.Boolean, true
	case KindTinyInt:
		return arrow.PrimitiveTypes.Int8, true
	case KindSmallInt:
		return arrow.PrimitiveTypes.Int16, true
	case KindInteger:
		return arrow.PrimitiveTypes.Int32, true
	case KindBigInt:
		return arrow.PrimitiveTypes.Int64, true
	case KindFloat:
		return arrow.PrimitiveTypes.Float32, true
	case KindDouble:
		return arrow.PrimitiveTypes.Float64, true
	case KindDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, true
	case KindVarchar:
		return arrow.BinaryTypes.String, true
	case KindBlob:
		return arrow.BinaryTypes.Binary, true
	case KindDate:
		return arrow.FixedWidthTypes.Date32, true
	case KindTime:
		return arrow.FixedWidthTypes.Time64us, true
	case KindTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, true
	case KindTimestampTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, true
	}
	return nil, false
}

// arrowIDKinds maps the Arrow type ids that convert without parameters.
var arrowIDKinds = map[arrow.Type]Kind{
	arrow.BOOL:              KindBoolean,
	arrow.INT8:              KindTinyInt,
	arrow.INT16:             KindSmallInt,
	arrow.INT32:             KindInteger,
	arrow.INT64:             KindBigInt,
	arrow.UINT8:             KindSmallInt,
	arrow.UINT16:            KindInteger,
	arrow.UINT32:            KindBigInt,
	arrow.FLOAT16:           KindFloat,
	arrow.FLOAT32:           KindFloat,
	arrow.FLOAT64:           KindDouble,
	arrow.STRING:            KindVarchar,
	arrow.LARGE_STRING:      KindVarchar,
	arrow.STRING_VIEW:       KindVarchar,
	arrow.BINARY:            KindBlob,
	arrow.LARGE_BINARY:      KindBlob,
	arrow.BINARY_VIEW:       KindBlob,
	arrow.FIXED_SIZE_BINARY: KindBlob,
	arrow.DATE32:            KindDate,
	arrow.DATE64:            KindDate,
	arrow.TIME32:            KindTime,
	arrow.TIME64:            KindTime,
}

// TypeFromArrow returns the SQL type for an Arrow type, for creating a table
// from an ingest's schema. See the mapping above for what is accepted. It
// stops at MaxTypeDepth levels of nesting and MaxFields fields.
func TypeFromArrow(dt arrow.DataType) (Type, error) {
	c := arrowConv{fields: MaxFields}
	return c.typeOf(dt, 0)
}

// arrowConv converts Arrow types within the limits: fields is what is
// left of MaxFields.
type arrowConv struct{ fields int }

// typeOf converts dt, nested in level LIST, STRUCT and MAP types.
func (c *arrowConv) typeOf(dt arrow.DataType, level int) (Type, error) {
	if k, ok := arrowIDKinds[dt.ID()]; ok {
		return Type{Kind: k}, nil
	}
	if n := childCount(dt); n >= 0 {
		if level >= MaxTypeDepth {
			return Type{}, invalidf("the Arrow type nests lists, structs and maps deeper than the limit of %d levels", MaxTypeDepth)
		}
		if err := c.take(n); err != nil {
			return Type{}, err
		}
	}
	switch dt := dt.(type) {
	case *arrow.TimestampType:
		if dt.TimeZone == "" {
			return Type{Kind: KindTimestamp}, nil
		}
		return Type{Kind: KindTimestampTZ}, nil
	case arrow.DecimalType:
		p, s := dt.GetPrecision(), dt.GetScale()
		if p > MaxDecimalPrecision || s < 0 || s > p {
			return Type{}, invalidf("unsupported Arrow type %s: DECIMAL needs 1..%d digits and a scale of 0..precision", dt, MaxDecimalPrecision)
		}
		return Decimal(int(dt.GetPrecision()), int(dt.GetScale())), nil
	case *arrow.DictionaryType:
		return c.typeOf(dt.ValueType, level)
	case *arrow.MapType:
		return c.mapOf(dt, level)
	case arrow.ListLikeType:
		elem, err := c.typeOf(dt.Elem(), level+1)
		return ListOf(elem), err
	case *arrow.StructType:
		return c.structOf(dt, level)
	}
	if dt.ID() == arrow.UINT64 {
		return Decimal(20, 0), nil
	}
	return Type{}, invalidf("unsupported Arrow type %s", dt)
}

// childCount is the child fields of the LIST, STRUCT or MAP that dt
// becomes, as MaxFields counts them; -1 for other types.
func childCount(dt arrow.DataType) int {
	switch dt := dt.(type) {
	case *arrow.MapType: // before ListLikeType, which it also is
		return 2
	case arrow.ListLikeType:
		return 1
	case *arrow.StructType:
		return dt.NumFields()
	}
	return -1
}

// errFieldsExhausted ends a conversion: the schema is too wide to go on.
var errFieldsExhausted = invalidf("the Arrow schema has more than %d fields (columns and their nested fields): that is the limit", MaxFields)

// take counts n more fields against MaxFields.
func (c *arrowConv) take(n int) error {
	if c.fields -= n; c.fields < 0 {
		return errFieldsExhausted
	}
	return nil
}

func (c *arrowConv) mapOf(dt *arrow.MapType, level int) (Type, error) {
	k, err := c.typeOf(dt.KeyType(), level+1)
	if err != nil {
		return Type{}, err
	}
	v, err := c.typeOf(dt.ItemType(), level+1)
	if err != nil {
		return Type{}, err
	}
	return MapOf(k, v), nil
}

func (c *arrowConv) structOf(dt *arrow.StructType, level int) (Type, error) {
	fields := make([]StructField, dt.NumFields())
	for i, f := range dt.Fields() {
		t, err := c.typeOf(f.Type, level+1)
		if err != nil {
			return Type{}, fmt.Errorf("struct field %s: %w", quoteName(f.Name), err)
		}
		fields[i] = StructField{Name: f.Name, Type: t}
	}
	return StructOf(fields...), nil
}

// ColumnsFromArrow returns the columns for an Arrow schema (an ingest in
// "create" mode): one column per field, NOT NULL where the field is not
// nullable. It checks what CREATE TABLE checks of columns (the limits, the
// names, repeated names), so that a caller can check a schema before it
// drops the table the schema would replace. Every problem is reported.
func ColumnsFromArrow(s *arrow.Schema) ([]Column, error) {
	if s.NumFields() > MaxColumns {
		return nil, invalidf("the Arrow schema has %d columns; the limit is %d", s.NumFields(), MaxColumns)
	}
	c := arrowConv{fields: MaxFields}
	cols := make([]Column, 0, s.NumFields())
	var errs []error
	seen := make(map[string]bool, s.NumFields())
	for _, f := range s.Fields() {
		if err := c.take(1); err != nil {
			return nil, err
		}
		t, err := c.typeOf(f.Type, 0)
		if err != nil {
			if errors.Is(err, errFieldsExhausted) {
				return nil, err
			}
			errs = append(errs, fmt.Errorf("column %s: %w", quoteName(f.Name), err))
			continue
		}
		col := Column{Name: f.Name, Type: t, NotNull: !f.Nullable}
		if err := checkColumn(col); err != nil {
			errs = append(errs, err)
		}
		key := strings.ToLower(f.Name)
		if seen[key] {
			errs = append(errs, invalidf("column %s is defined more than once (names differ only in case)", quoteName(f.Name)))
		}
		seen[key] = true
		cols = append(cols, col)
	}
	return cols, errors.Join(errs...)
}
