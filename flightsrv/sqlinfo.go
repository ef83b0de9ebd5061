package flightsrv

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

func (s *Server) registerSqlInfo() error {
	for id, v := range map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:                        "Lakestream",
		flightsql.SqlInfoFlightSqlServerVersion:                     s.opts.Version,
		flightsql.SqlInfoFlightSqlServerArrowVersion:                "18.8.0",
		flightsql.SqlInfoFlightSqlServerReadOnly:                    false,
		flightsql.SqlInfoFlightSqlServerSql:                         true,
		flightsql.SqlInfoFlightSqlServerSubstrait:                   false,
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoFlightSqlServerCancel:                      false,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               true,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: false,
		flightsql.SqlInfoDDLCatalog:                                 false,
		flightsql.SqlInfoDDLSchema:                                  true,
		flightsql.SqlInfoDDLTable:                                   true,
		flightsql.SqlInfoIdentifierQuoteChar:                        `"`,
		flightsql.SqlInfoQuotedIdentifierCase:                       int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoIdentifierCase:                             int64(flightsql.SqlCaseSensitivityLowerCase),
		flightsql.SqlInfoTransactionsSupported:                      false,
	} {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return err
		}
	}
	return nil
}

// XDBC type codes (FlightSql.proto XdbcDataType) and date-time subcodes.
const (
	xdbcDecimal   = 3
	xdbcInteger   = 4
	xdbcSmallint  = 5
	xdbcFloat     = 6
	xdbcDouble    = 8
	xdbcDatetime  = 9
	xdbcVarchar   = 12
	xdbcDate      = 91
	xdbcTime      = 92
	xdbcTimestamp = 93
	xdbcVarbinary = -3
	xdbcBigint    = -5
	xdbcTinyint   = -6
	xdbcBit       = -7
	xdbcUnknown   = 0
)

// xdbcTypes are the SQL types of docs/sql.md ("Types") with their XDBC description:
// name, data type, column size, create params, datetime subcode.
var xdbcTypes = []struct {
	name    string
	code    int32
	size    int32
	params  []string
	subcode int32
}{
	{"BOOLEAN", xdbcBit, 1, nil, 0},
	{"TINYINT", xdbcTinyint, 3, nil, 0},
	{"SMALLINT", xdbcSmallint, 5, nil, 0},
	{"INTEGER", xdbcInteger, 10, nil, 0},
	{"BIGINT", xdbcBigint, 19, nil, 0},
	{"FLOAT", xdbcFloat, 7, nil, 0},
	{"DOUBLE", xdbcDouble, 15, nil, 0},
	{"DECIMAL", xdbcDecimal, 38, []string{"precision", "scale"}, 0},
	{"VARCHAR", xdbcVarchar, 1 << 30, nil, 0},
	{"BLOB", xdbcVarbinary, 1 << 30, nil, 0},
	{"DATE", xdbcDate, 10, nil, 1},
	{"TIME", xdbcTime, 15, nil, 2},
	{"TIMESTAMP", xdbcTimestamp, 26, nil, 3},
	{"TIMESTAMPTZ", xdbcTimestamp, 32, nil, 3},
	// Nested types have no XDBC code: XDBC_UNKNOWN_TYPE, with the element
	// types as create parameters.
	{"LIST", xdbcUnknown, 0, []string{"element type"}, 0},
	{"STRUCT", xdbcUnknown, 0, []string{"field name", "field type"}, 0},
	{"MAP", xdbcUnknown, 0, []string{"key type", "value type"}, 0},
}

// xdbcLiteral is the literal prefix and suffix of a type, as DuckDB reads
// them: 'text', DATE '2024-01-31', TIMESTAMPTZ '...'.
func xdbcLiteral(name string, code int32) (prefix, suffix any) {
	switch code {
	case xdbcVarchar:
		return "'", "'"
	case xdbcVarbinary:
		return "'", "'::BLOB"
	case xdbcDate, xdbcTime, xdbcTimestamp:
		return name + " '", "'"
	}
	return nil, nil
}

// xdbcScale is a type's minimum and maximum scale and its radix.
func xdbcScale(code int32) (minScale, maxScale, radix any) {
	switch code {
	case xdbcDecimal:
		return int32(0), int32(38), int32(10)
	case xdbcTinyint, xdbcSmallint, xdbcInteger, xdbcBigint:
		return int32(0), int32(0), int32(10)
	case xdbcFloat, xdbcDouble:
		return nil, nil, int32(10)
	case xdbcTime, xdbcTimestamp:
		return int32(6), int32(6), nil
	}
	return nil, nil, nil
}

func (s *Server) GetFlightInfoXdbcTypeInfo(_ context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.XdbcTypeInfo), nil
}

func (s *Server) DoGetXdbcTypeInfo(_ context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rows [][]any
	for _, t := range xdbcTypes {
		if dt := cmd.GetDataType(); dt != nil && *dt != t.code {
			continue
		}
		sqlType, sub := t.code, any(nil)
		if t.subcode != 0 {
			sqlType, sub = xdbcDatetime, t.subcode
		}
		var params any
		if t.params != nil {
			params = t.params
		}
		prefix, suffix := xdbcLiteral(t.name, t.code)
		minScale, maxScale, radix := xdbcScale(t.code)
		var size, unsigned any
		if t.size > 0 {
			size = t.size
		}
		if radix != nil {
			unsigned = false // numbers are signed; other types have no sign
		}
		rows = append(rows, []any{
			t.name, t.code, size, prefix, suffix, params,
			int32(1),              // nullable
			t.code == xdbcVarchar, // case sensitive
			int32(3),              // searchable
			unsigned, t.code == xdbcDecimal, false, t.name,
			minScale, maxScale, sqlType, sub, radix, nil,
		})
	}
	return s.oneRecord(schema_ref.XdbcTypeInfo, rows)
}
