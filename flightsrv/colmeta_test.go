package flightsrv_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
)

// bare is s without the Flight SQL column metadata, for comparing types.
func bare(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i, f := range fields {
		var keys, vals []string
		for j, k := range f.Metadata.Keys() {
			if !strings.HasPrefix(k, "ARROW:FLIGHT:SQL:") {
				keys = append(keys, k)
				vals = append(vals, f.Metadata.Values()[j])
			}
		}
		fields[i].Metadata = arrow.NewMetadata(keys, vals)
		if len(keys) == 0 {
			fields[i].Metadata = arrow.Metadata{}
		}
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// Every schema of a result carries the column metadata JDBC and ODBC
// drivers read, the same in FlightInfo, GetSchema, the prepared statement
// and the stream.
func TestColumnMetadata(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	ts.mustIngest("ev", "append", events(t, 0, 10))
	ctx := testCtx(t)
	info := ts.mustExec("SELECT id, kind, ts FROM ev")
	schema, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ       string
		prec      int32
		scale     int32
		sensitive bool
	}{{"BIGINT", 19, 0, false}, {"VARCHAR", 1 << 30, 0, true}, {"TIMESTAMPTZ", 32, 6, false}}
	for i, w := range want {
		fmd := schema.Field(i).Metadata
		md := flightsql.ColumnMetadata{Data: &fmd}
		name, _ := md.TypeName()
		prec, _ := md.Precision()
		scale, _ := md.Scale()
		cs, _ := md.IsCaseSensitive()
		ro, _ := md.IsReadOnly()
		srch, _ := md.IsSearchable()
		ai, ok := md.IsAutoIncrement()
		cat, _ := md.CatalogName()
		db, _ := md.SchemaName()
		tbl, _ := md.TableName()
		if name != w.typ || prec != w.prec || scale != w.scale || cs != w.sensitive || !ro || !srch || ai || !ok ||
			cat != "lakestream" || db != "default" || tbl != "ev" {
			t.Errorf("field %s: metadata %v", schema.Field(i).Name, schema.Field(i).Metadata)
		}
	}
	ts.fetch(info) // checks that the stream's schema is the FlightInfo's
	prep, err := ts.cl.Prepare(ctx, "SELECT id, kind, ts FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if !prep.DatasetSchema().Equal(schema) {
		t.Errorf("prepared DatasetSchema %v, FlightInfo %v", prep.DatasetSchema(), schema)
	}
	sr, err := ts.cl.GetExecuteSchema(ctx, "SELECT id, kind, ts FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := flight.DeserializeSchema(sr.GetSchema(), memory.DefaultAllocator); !s.Equal(schema) {
		t.Errorf("GetExecuteSchema %v, FlightInfo %v", s, schema)
	}
}

// GetSchema answers every command with the schema its FlightInfo
// announces.
func TestGetSchemaOfEveryCommand(t *testing.T) {
	ts := startServer(t, serverConfig{})
	ts.mustExec("CREATE TABLE ev " + eventsCols)
	ctx := testCtx(t)
	prep, err := ts.cl.Prepare(ctx, "SELECT id, kind FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	table := "ev"
	for _, cmd := range []proto.Message{
		&pb.CommandStatementQuery{Query: "SELECT id, kind FROM ev"},
		&pb.CommandPreparedStatementQuery{PreparedStatementHandle: prep.Handle()},
		&pb.CommandGetCatalogs{},
		&pb.CommandGetDbSchemas{},
		&pb.CommandGetTables{},
		&pb.CommandGetTables{IncludeSchema: true},
		&pb.CommandGetTableTypes{},
		&pb.CommandGetPrimaryKeys{Table: table},
		&pb.CommandGetXdbcTypeInfo{},
		&pb.CommandGetSqlInfo{},
	} {
		desc := cmdDesc(t, cmd)
		sr, err := ts.cl.Client.GetSchema(ctx, desc)
		if err != nil {
			t.Errorf("GetSchema %T: %v", cmd, err)
			continue
		}
		info, err := ts.cl.Client.GetFlightInfo(ctx, desc)
		if err != nil {
			t.Errorf("GetFlightInfo %T: %v", cmd, err)
			continue
		}
		got, err1 := flight.DeserializeSchema(sr.GetSchema(), memory.DefaultAllocator)
		want, err2 := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
		if err1 != nil || err2 != nil || !got.Equal(want) {
			t.Errorf("%T: GetSchema %v (%v), FlightInfo %v (%v)", cmd, got, err1, want, err2)
		}
	}
}
