package catalog

import (
	"errors"
	"fmt"

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
// from an ingest's schema. See the mapping above for what is accepted.
func TypeFromArrow(dt arrow.DataType) (Type, error) {
	if k, ok := arrowIDKinds[dt.ID()]; ok {
		return Type{Kind: k}, nil
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
		return TypeFromArrow(dt.ValueType)
	case *arrow.MapType:
		return mapFromArrow(dt)
	case arrow.ListLikeType:
		elem, err := TypeFromArrow(dt.Elem())
		return ListOf(elem), err
	case *arrow.StructType:
		return structFromArrow(dt)
	}
	if dt.ID() == arrow.UINT64 {
		return Decimal(20, 0), nil
	}
	return Type{}, invalidf("unsupported Arrow type %s", dt)
}

func mapFromArrow(dt *arrow.MapType) (Type, error) {
	k, err := TypeFromArrow(dt.KeyType())
	if err != nil {
		return Type{}, err
	}
	v, err := TypeFromArrow(dt.ItemType())
	if err != nil {
		return Type{}, err
	}
	return MapOf(k, v), nil
}

func structFromArrow(dt *arrow.StructType) (Type, error) {
	fields := make([]StructField, dt.NumFields())
	for i, f := range dt.Fields() {
		t, err := TypeFromArrow(f.Type)
		if err != nil {
			return Type{}, fmt.Errorf("struct field %q: %w", f.Name, err)
		}
		fields[i] = StructField{Name: f.Name, Type: t}
	}
	return StructOf(fields...), nil
}

// ColumnsFromArrow returns the columns for an Arrow schema (an ingest in
// "create" mode): one column per field, NOT NULL where the field is not
// nullable. Every unsupported field is reported.
func ColumnsFromArrow(s *arrow.Schema) ([]Column, error) {
	cols := make([]Column, 0, s.NumFields())
	var errs []error
	for _, f := range s.Fields() {
		t, err := TypeFromArrow(f.Type)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %q: %w", f.Name, err))
			continue
		}
		cols = append(cols, Column{Name: f.Name, Type: t, NotNull: !f.Nullable})
	}
	return cols, errors.Join(errs...)
}
