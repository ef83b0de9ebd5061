package duck

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Arrow → DuckDB type mapping of scanned columns (the types of docs/sql.md):
//
//	bool                        BOOLEAN
//	int8/16/32/64               TINYINT/SMALLINT/INTEGER/BIGINT
//	uint8/16/32/64              UTINYINT/USMALLINT/UINTEGER/UBIGINT
//	float32/64                  FLOAT/DOUBLE
//	decimal128(p,s)             DECIMAL(p,s)
//	utf8, large_utf8            VARCHAR
//	binary, large_binary        BLOB
//	date32                      DATE
//	time64[us]                  TIME
//	timestamp[us]               TIMESTAMP
//	timestamp[us, tz=any]       TIMESTAMPTZ (values are UTC instants either way)
//	timestamp[s|ms|ns]          TIMESTAMP / TIMESTAMPTZ, converted to us
//	list, large_list            LIST
//	struct                      STRUCT
//	map                         MAP
//
// The reverse direction (results) is DuckDB's own Arrow export; see result.go.

// logicalType returns the DuckDB type of an Arrow type. The caller destroys
// it with bindings.DestroyLogicalType.
func logicalType(t arrow.DataType) (bindings.LogicalType, error) {
	if id, ok := primitiveType(t); ok {
		return bindings.CreateLogicalType(id), nil
	}
	switch t := t.(type) {
	case *arrow.Decimal128Type:
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return bindings.LogicalType{}, fmt.Errorf("unsupported type %s", t)
		}
		return bindings.CreateDecimalType(uint8(t.Precision), uint8(t.Scale)), nil
	case *arrow.ListType:
		return listType(t.Elem())
	case *arrow.LargeListType:
		return listType(t.Elem())
	case *arrow.MapType:
		k, err := logicalType(t.KeyType())
		if err != nil {
			return bindings.LogicalType{}, err
		}
		defer bindings.DestroyLogicalType(&k)
		v, err := logicalType(t.ItemType())
		if err != nil {
			return bindings.LogicalType{}, err
		}
		defer bindings.DestroyLogicalType(&v)
		return bindings.CreateMapType(k, v), nil
	case *arrow.StructType:
		return structType(t)
	}
	return bindings.LogicalType{}, fmt.Errorf("unsupported type %s", t)
}

// primitiveType maps the Arrow types that need no type parameters.
func primitiveType(t arrow.DataType) (bindings.Type, bool) {
	switch t.ID() {
	case arrow.BOOL:
		return bindings.TypeBoolean, true
	case arrow.INT8:
		return bindings.TypeTinyInt, true
	case arrow.INT16:
		return bindings.TypeSmallInt, true
	case arrow.INT32:
		return bindings.TypeInteger, true
	case arrow.INT64:
		return bindings.TypeBigInt, true
	case arrow.UINT8:
		return bindings.TypeUTinyInt, true
	case arrow.UINT16:
		return bindings.TypeUSmallInt, true
	case arrow.UINT32:
		return bindings.TypeUInteger, true
	case arrow.UINT64:
		return bindings.TypeUBigInt, true
	case arrow.FLOAT32:
		return bindings.TypeFloat, true
	case arrow.FLOAT64:
		return bindings.TypeDouble, true
	case arrow.STRING, arrow.LARGE_STRING:
		return bindings.TypeVarchar, true
	case arrow.BINARY, arrow.LARGE_BINARY:
		return bindings.TypeBlob, true
	case arrow.DATE32:
		return bindings.TypeDate, true
	case arrow.TIME64:
		if t.(*arrow.Time64Type).Unit == arrow.Microsecond {
			return bindings.TypeTime, true
		}
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).TimeZone != "" {
			return bindings.TypeTimestampTZ, true
		}
		return bindings.TypeTimestamp, true
	}
	return bindings.TypeInvalid, false
}

func listType(elem arrow.DataType) (bindings.LogicalType, error) {
	c, err := logicalType(elem)
	if err != nil {
		return bindings.LogicalType{}, err
	}
	defer bindings.DestroyLogicalType(&c)
	return bindings.CreateListType(c), nil
}

func structType(t *arrow.StructType) (bindings.LogicalType, error) {
	types := make([]bindings.LogicalType, 0, t.NumFields())
	names := make([]string, 0, t.NumFields())
	defer func() {
		for i := range types {
			bindings.DestroyLogicalType(&types[i])
		}
	}()
	for _, f := range t.Fields() {
		c, err := logicalType(f.Type)
		if err != nil {
			return bindings.LogicalType{}, err
		}
		types = append(types, c)
		names = append(names, f.Name)
	}
	return bindings.CreateStructType(types, names), nil
}
