package adbcgo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// basicType is one basic SQL type as a Go ADBC client binds it: the Arrow
// type, two values (lo < hi) as Arrow JSON, and the same values as DuckDB
// literals of the SQL type.
type basicType struct {
	name, sql string
	arrow     arrow.DataType
	json      [2]string
	literal   [2]string
}

var basicTypes = []basicType{
	{"bool", "BOOLEAN", arrow.FixedWidthTypes.Boolean, [2]string{"false", "true"}, [2]string{"false", "true"}},
	{"int8", "TINYINT", arrow.PrimitiveTypes.Int8, [2]string{"-5", "9"}, [2]string{"-5", "9"}},
	{"int16", "SMALLINT", arrow.PrimitiveTypes.Int16, [2]string{"-300", "300"}, [2]string{"-300", "300"}},
	{"int32", "INTEGER", arrow.PrimitiveTypes.Int32, [2]string{"-70000", "70000"}, [2]string{"-70000", "70000"}},
	{"int64", "BIGINT", arrow.PrimitiveTypes.Int64, [2]string{"9", "1099511627776"}, [2]string{"9", "1099511627776"}},
	{"float", "FLOAT", arrow.PrimitiveTypes.Float32, [2]string{"-1.5", "2.25"}, [2]string{"-1.5", "2.25"}},
	{"double", "DOUBLE", arrow.PrimitiveTypes.Float64, [2]string{"0.125", "1e300"}, [2]string{"0.125", "1e300"}},
	{"decimal", "DECIMAL(9,2)", &arrow.Decimal128Type{Precision: 9, Scale: 2}, [2]string{`"-1234567.89"`, `"1234567.89"`}, [2]string{"'-1234567.89'", "'1234567.89'"}},
	{"varchar", "VARCHAR", arrow.BinaryTypes.String, [2]string{`"abc"`, `"löschen"`}, [2]string{"'abc'", "'löschen'"}},
	{"blob", "BLOB", arrow.BinaryTypes.Binary, [2]string{`"AAE="`, `"/w=="`}, [2]string{`'\x00\x01'`, `'\xFF'`}},
	{"date", "DATE", arrow.FixedWidthTypes.Date32, [2]string{`"1999-12-31"`, `"2024-02-29"`}, [2]string{"'1999-12-31'", "'2024-02-29'"}},
	{"time", "TIME", arrow.FixedWidthTypes.Time64us, [2]string{`"00:00:01"`, `"23:59:59.999999"`}, [2]string{"'00:00:01'", "'23:59:59.999999'"}},
	{"timestamp", "TIMESTAMP", &arrow.TimestampType{Unit: arrow.Microsecond}, [2]string{`"1970-01-01 00:00:00.000001"`, `"2024-02-29 12:30:00.000005"`},
		[2]string{"'1970-01-01 00:00:00.000001'", "'2024-02-29 12:30:00.000005'"}},
	{"timestamptz", "TIMESTAMPTZ", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, [2]string{`"1970-01-01 00:00:00Z"`, `"2024-02-29 12:30:00.000005Z"`},
		[2]string{"'1970-01-01 00:00:00+00'", "'2024-02-29 12:30:00.000005+00'"}},
}

// typedStatements are statements over typed parameters; each parameter is
// value 0 (lo) or 1 (hi) of the type.
var typedStatements = []struct {
	sql    string
	values []int
}{
	{"SELECT ? AS x", []int{0}},
	{"SELECT ? < ? AS lt, ? = ? AS eq", []int{0, 1, 1, 1}},
	{"SELECT greatest(?, ?) AS g", []int{0, 1}},
	{"SELECT typeof(?) AS t", []int{1}},
	{"SELECT [?, ?] AS l", []int{0, 1}},
	{"SELECT ? IS NULL AS n, coalesce(?, ?) AS c", []int{0, 1, 0}},
}

// Typed parameters of every basic type give DuckDB's answer for the same
// statement with the same typed values: the reference is the statement
// with each parameter written as a literal of its type, which DuckDB in
// the same node evaluates.
func TestTypedParameters(t *testing.T) {
	c := connect(t, startServer(t))
	for _, b := range basicTypes {
		for _, st := range typedStatements {
			rec := c.typedRecord(b, st.values)
			got, err := c.queryRecord(st.sql, rec)
			rec.Release()
			if err != nil {
				t.Errorf("%s with %s: %v", st.sql, b.name, err)
				continue
			}
			lit := st.sql
			for _, v := range st.values {
				lit = strings.Replace(lit, "?", fmt.Sprintf("CAST(%s AS %s)", b.literal[v], b.sql), 1)
			}
			want, err := c.queryRecord(lit, nil)
			if err != nil {
				t.Fatalf("%s: %v", lit, err)
			}
			if got != want {
				t.Errorf("%s with %s parameters:\n got %s\nwant %s (%s)", st.sql, b.name, got, want, lit)
			}
		}
	}
}

// typedRecord is the one-row record of values of b.
func (c *client) typedRecord(b basicType, values []int) arrow.RecordBatch {
	c.t.Helper()
	fields := make([]arrow.Field, len(values))
	cols := make([]arrow.Array, len(values))
	for i, v := range values {
		arr, _, err := array.FromJSON(c.mem, b.arrow, strings.NewReader("["+b.json[v]+"]"))
		if err != nil {
			c.t.Fatalf("%s %s: %v", b.name, b.json[v], err)
		}
		cols[i] = arr
		fields[i] = arrow.Field{Name: fmt.Sprintf("p%d", i+1), Type: b.arrow, Nullable: true}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// queryRecord runs sql, prepared and bound to rec when rec is not nil, and
// renders the result with its column types: "name type: value | ...".
func (c *client) queryRecord(sql string, rec arrow.RecordBatch) (string, error) {
	st := c.statement()
	if err := st.SetSqlQuery(sql); err != nil {
		return "", err
	}
	if rec != nil {
		if err := st.Prepare(testCtx(c.t)); err != nil {
			return "", err
		}
		if err := st.Bind(testCtx(c.t), rec); err != nil {
			return "", err
		}
	}
	rdr, _, err := st.ExecuteQuery(testCtx(c.t))
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	var b strings.Builder
	for rdr.Next() {
		r := rdr.RecordBatch()
		for i := range int(r.NumRows()) {
			for j, col := range r.Columns() {
				fmt.Fprintf(&b, "%s %s: %s | ", r.Schema().Field(j).Name, col.DataType(), col.ValueStr(i))
			}
		}
	}
	return b.String(), rdr.Err()
}
