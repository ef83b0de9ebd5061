package flightsrv_test

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/catalog"
)

// metaResult checks that a metadata FlightInfo and its one stream both
// carry exactly the reference schema, and returns the stream's records.
func (ts *testServer) metaResult(what string, info *flight.FlightInfo, err error, ref *arrow.Schema) []arrow.RecordBatch {
	ts.t.Helper()
	if err != nil {
		ts.t.Fatalf("%s: %v", what, err)
	}
	s, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		ts.t.Fatalf("%s: FlightInfo schema: %v", what, err)
	}
	if !s.Equal(ref) {
		ts.t.Errorf("%s: FlightInfo schema\n%v\nwant the reference\n%v", what, s, ref)
	}
	if n := len(info.GetEndpoint()); n != 1 {
		ts.t.Fatalf("%s: %d endpoints, want 1", what, n)
	}
	rdr, err := ts.cl.DoGet(testCtx(ts.t), info.GetEndpoint()[0].GetTicket())
	if err != nil {
		ts.t.Fatalf("%s: DoGet: %v", what, err)
	}
	if !rdr.Schema().Equal(ref) {
		ts.t.Errorf("%s: stream schema\n%v\nwant the reference\n%v", what, rdr.Schema(), ref)
	}
	recs := readStream(ts.t, rdr)
	ts.t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	for _, r := range recs {
		if !r.Schema().Equal(ref) {
			ts.t.Errorf("%s: record schema %v", what, r.Schema())
		}
	}
	return recs
}

// strings returns column c of recs as strings (nulls as "(null)").
func columnStrings(recs []arrow.RecordBatch, c int) []string {
	var out []string
	for _, r := range recs {
		col := r.Column(c)
		for i := range col.Len() {
			out = append(out, col.ValueStr(i))
		}
	}
	return out
}

func metadataServer(t *testing.T) *testServer {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols + " WITH ('bucket.num'='2')")
	ts.mustExec("CREATE TABLE users (id BIGINT NOT NULL, region VARCHAR NOT NULL, name VARCHAR, PRIMARY KEY (region, id))")
	ts.mustExec("CREATE DATABASE sales")
	ts.mustExec("CREATE TABLE sales.orders (id BIGINT, total DECIMAL(10,2), placed DATE)")
	return ts
}

func TestGetCatalogs(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetCatalogs(testCtx(t))
	recs := ts.metaResult("GetCatalogs", info, err, schema_ref.Catalogs)
	if got := columnStrings(recs, 0); !slices.Equal(got, []string{"lakestream"}) {
		t.Errorf("catalogs %v", got)
	}
}

func TestGetDBSchemas(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetDBSchemas(testCtx(t), &flightsql.GetDBSchemasOpts{})
	recs := ts.metaResult("GetDBSchemas", info, err, schema_ref.DBSchemas)
	got := columnStrings(recs, 1)
	slices.Sort(got)
	if !slices.Equal(got, []string{"default", "sales"}) {
		t.Errorf("schemas %v, want [default sales]", got)
	}
	for _, c := range columnStrings(recs, 0) {
		if c != "lakestream" {
			t.Errorf("catalog_name %q", c)
		}
	}
	pattern := "sa%"
	info, err = ts.cl.GetDBSchemas(testCtx(t), &flightsql.GetDBSchemasOpts{DbSchemaFilterPattern: &pattern})
	recs = ts.metaResult("GetDBSchemas sa%", info, err, schema_ref.DBSchemas)
	if got := columnStrings(recs, 1); !slices.Equal(got, []string{"sales"}) {
		t.Errorf("schemas like sa%%: %v", got)
	}
}

func TestGetTables(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{})
	recs := ts.metaResult("GetTables", info, err, schema_ref.Tables)
	var names []string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			names = append(names, r.Column(1).ValueStr(i)+"."+r.Column(2).ValueStr(i)+":"+r.Column(3).ValueStr(i))
		}
	}
	slices.Sort(names)
	want := []string{"default.ev:TABLE", "default.users:TABLE", "sales.orders:TABLE"}
	if !slices.Equal(names, want) {
		t.Errorf("tables %v, want %v", names, want)
	}

	// With schemas: each decodes to the table's Arrow schema.
	info, err = ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{IncludeSchema: true})
	recs = ts.metaResult("GetTables with schemas", info, err, schema_ref.TablesWithIncludedSchema)
	wantSchemas := map[string]*arrow.Schema{
		"ev": eventsSchema(),
		"users": arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "region", Type: arrow.BinaryTypes.String},
			{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		}, nil),
		"orders": arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "total", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
			{Name: "placed", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		}, nil),
	}
	seen := 0
	for _, r := range recs {
		schemas := r.Column(4).(*array.Binary)
		for i := range int(r.NumRows()) {
			name := r.Column(2).ValueStr(i)
			s, err := flight.DeserializeSchema(schemas.Value(i), memory.DefaultAllocator)
			if err != nil {
				t.Errorf("table %s: schema does not decode: %v", name, err)
				continue
			}
			if !bare(s).Equal(wantSchemas[name]) {
				t.Errorf("table %s: schema %v, want %v", name, s, wantSchemas[name])
			}
			seen++
		}
	}
	if seen != 3 {
		t.Errorf("%d schemas, want 3", seen)
	}

	// Filters.
	db, tbl := "sales", "ord%"
	info, err = ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{DbSchemaFilterPattern: &db, TableNameFilterPattern: &tbl})
	recs = ts.metaResult("GetTables filtered", info, err, schema_ref.Tables)
	if got := columnStrings(recs, 2); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("tables in sales like ord%%: %v", got)
	}
	info, err = ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}})
	recs = ts.metaResult("GetTables views", info, err, schema_ref.Tables)
	if got := columnStrings(recs, 2); len(got) != 0 {
		t.Errorf("views: %v, want none", got)
	}
	other := "hive"
	info, err = ts.cl.GetTables(testCtx(t), &flightsql.GetTablesOpts{Catalog: &other})
	recs = ts.metaResult("GetTables other catalog", info, err, schema_ref.Tables)
	if got := columnStrings(recs, 2); len(got) != 0 {
		t.Errorf("tables of catalog hive: %v, want none", got)
	}
}

func TestGetTableTypes(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetTableTypes(testCtx(t))
	recs := ts.metaResult("GetTableTypes", info, err, schema_ref.TableTypes)
	if got := columnStrings(recs, 0); !slices.Equal(got, []string{"TABLE", "VIEW"}) {
		t.Errorf("table types %v", got)
	}
}

func TestGetPrimaryKeys(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetPrimaryKeys(testCtx(t), flightsql.TableRef{Table: "users"})
	recs := ts.metaResult("GetPrimaryKeys", info, err, schema_ref.PrimaryKeys)
	var keys []string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			keys = append(keys, r.Column(2).ValueStr(i)+"."+r.Column(3).ValueStr(i)+"#"+r.Column(4).ValueStr(i))
		}
	}
	if want := []string{"users.region#1", "users.id#2"}; !slices.Equal(keys, want) {
		t.Errorf("primary key %v, want %v", keys, want)
	}
	info, err = ts.cl.GetPrimaryKeys(testCtx(t), flightsql.TableRef{Table: "ev"})
	recs = ts.metaResult("GetPrimaryKeys of a log table", info, err, schema_ref.PrimaryKeys)
	if got := columnStrings(recs, 3); len(got) != 0 {
		t.Errorf("log table has primary key %v", got)
	}
	_, err = ts.cl.GetPrimaryKeys(testCtx(t), flightsql.TableRef{Table: "nope"})
	if err == nil {
		// The error may come at DoGet instead.
		info, _ := ts.cl.GetPrimaryKeys(testCtx(t), flightsql.TableRef{Table: "nope"})
		rdr, derr := ts.cl.DoGet(testCtx(t), info.GetEndpoint()[0].GetTicket())
		if derr == nil {
			for rdr.Next() {
			}
			derr = rdr.Err()
			rdr.Release()
		}
		err = derr
	}
	expectCode(t, err, codes.NotFound, "nope")
}

func TestGetXdbcTypeInfo(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetXdbcTypeInfo(testCtx(t), nil)
	recs := ts.metaResult("GetXdbcTypeInfo", info, err, schema_ref.XdbcTypeInfo)
	names := columnStrings(recs, 0)
	// Every type of the SQL surface.
	for k := catalog.KindBoolean; k <= catalog.KindMap; k++ {
		if want := k.String(); !slices.Contains(names, want) {
			t.Errorf("type %s missing from %v", want, names)
		}
	}
	bigint := int32(-5)
	info, err = ts.cl.GetXdbcTypeInfo(testCtx(t), &bigint)
	recs = ts.metaResult("GetXdbcTypeInfo BIGINT", info, err, schema_ref.XdbcTypeInfo)
	if got := columnStrings(recs, 0); !slices.Equal(got, []string{"BIGINT"}) {
		t.Errorf("types of code -5: %v", got)
	}
}

func TestGetSqlInfo(t *testing.T) {
	ts := metadataServer(t)
	info, err := ts.cl.GetSqlInfo(testCtx(t), []flightsql.SqlInfo{
		flightsql.SqlInfoFlightSqlServerName,
		flightsql.SqlInfoFlightSqlServerReadOnly,
		flightsql.SqlInfoFlightSqlServerBulkIngestion,
		flightsql.SqlInfoFlightSqlServerVersion,
	})
	recs := ts.metaResult("GetSqlInfo", info, err, schema_ref.SqlInfo)
	got := map[uint32]string{}
	for _, r := range recs {
		ids := r.Column(0).(*array.Uint32)
		vals := r.Column(1).(*array.DenseUnion)
		for i := range int(r.NumRows()) {
			child := vals.Field(vals.ChildID(i))
			got[ids.Value(i)] = child.ValueStr(int(vals.ValueOffset(i)))
		}
	}
	for id, want := range map[flightsql.SqlInfo]string{
		flightsql.SqlInfoFlightSqlServerName:          "Lakestream",
		flightsql.SqlInfoFlightSqlServerReadOnly:      "false",
		flightsql.SqlInfoFlightSqlServerBulkIngestion: "true",
		flightsql.SqlInfoFlightSqlServerVersion:       "dev",
	} {
		if got[uint32(id)] != want {
			t.Errorf("SqlInfo %v = %q, want %q", id, got[uint32(id)], want)
		}
	}
	// All of them.
	info, err = ts.cl.GetSqlInfo(testCtx(t), nil)
	recs = ts.metaResult("GetSqlInfo (all)", info, err, schema_ref.SqlInfo)
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	if n < 10 {
		t.Errorf("GetSqlInfo without ids returned %d values", n)
	}
}
