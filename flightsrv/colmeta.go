package flightsrv

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lakestream/lakestream/catalog"
)

// Flight SQL column metadata: the ARROW:FLIGHT:SQL:* field metadata that
// JDBC and ODBC drivers turn into ResultSetMetaData / SQLDescribeCol (type
// name, precision, scale, case sensitivity, searchable, read-only, and the
// catalog, schema and table a column comes from). Every schema the service
// sends for a result or parameters carries it, in FlightInfo, GetSchema,
// CreatePreparedStatement and the DoGet stream alike, so a client sees the
// same schema wherever it looks.

// columnOrigin is the table a result's columns come from: a plain scan's.
// Results computed by the engine have none.
type columnOrigin struct {
	db, table string
}

// withColumnMetadata returns schema with the column metadata on each field
// (the fields' other metadata kept). origin may be nil.
func withColumnMetadata(schema *arrow.Schema, origin *columnOrigin) *arrow.Schema {
	if schema == nil {
		return nil
	}
	fields := schema.Fields()
	for i, f := range fields {
		fields[i].Metadata = fieldMetadata(f, origin)
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}

func fieldMetadata(f arrow.Field, origin *columnOrigin) arrow.Metadata {
	b := flightsql.NewColumnMetadataBuilder()
	b.CatalogName(catalogName)
	if origin != nil {
		b.SchemaName(origin.db).TableName(origin.table)
	}
	name, prec, scale := sqlTypeOf(f.Type)
	b.TypeName(name)
	if prec > 0 {
		b.Precision(prec)
	}
	b.Scale(scale)
	b.IsAutoIncrement(false)
	b.IsCaseSensitive(isText(f.Type))
	b.IsReadOnly(true) // result sets are not updatable
	b.IsSearchable(true)
	md := b.Metadata()
	keys, vals := md.Keys(), md.Values()
	for i, k := range f.Metadata.Keys() {
		if !strings.HasPrefix(k, "ARROW:FLIGHT:SQL:") {
			keys = append(keys, k)
			vals = append(vals, f.Metadata.Values()[i])
		}
	}
	return arrow.NewMetadata(keys, vals)
}

func isText(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

// sqlTypeOf is the SQL type name of an Arrow type (docs/sql.md, "Types"),
// with its precision (decimal digits, or the display size of date-times
// and the maximum length of strings) and scale (fraction digits).
func sqlTypeOf(t arrow.DataType) (name string, precision, scale int32) {
	switch t := t.(type) {
	case *arrow.Decimal128Type:
		return "DECIMAL(" + strconv.Itoa(int(t.Precision)) + "," + strconv.Itoa(int(t.Scale)) + ")", t.Precision, t.Scale
	case *arrow.NullType:
		return "NULL", 0, 0
	case *arrow.MonthDayNanoIntervalType, *arrow.DurationType:
		return "INTERVAL", 0, 0
	case *arrow.Time64Type:
		return "TIME", 15, 6
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "TIMESTAMPTZ", 32, 6
		}
		return "TIMESTAMP", 26, 6
	}
	ct, err := catalog.TypeFromArrow(t)
	if err != nil {
		return strings.ToUpper(t.String()), 0, 0
	}
	name = catalog.TypeString(ct)
	for _, x := range xdbcTypes {
		if x.name == name {
			return name, x.size, 0
		}
	}
	return name, 0, 0
}

// tableSchema is the Arrow schema of a table with its column metadata.
func tableSchema(def *catalog.Table) *arrow.Schema {
	return withColumnMetadata(def.ArrowSchema(), &columnOrigin{db: def.DB, table: def.Name})
}
