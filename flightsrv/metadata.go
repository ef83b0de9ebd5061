package flightsrv

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/lakestream/lakestream/catalog"
)

// catalogName is the one Flight SQL catalog; Lakestream databases are its
// schemas.
const catalogName = "lakestream"

const tableType = "TABLE"

// metaInfo is the FlightInfo of a metadata command: one endpoint whose
// ticket is the command itself, which the Flight SQL router dispatches.
func (s *Server) metaInfo(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// oneRecord streams rows built by buildRecord.
func (s *Server) oneRecord(schema *arrow.Schema, rows [][]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rec, err := buildRecord(s, schema, rows)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: rec}
	close(ch)
	return schema, ch, nil
}

func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.Catalogs), nil
}

func (s *Server) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.oneRecord(schema_ref.Catalogs, [][]any{{catalogName}})
}

func (s *Server) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.DBSchemas), nil
}

func (s *Server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	dbs, err := s.store.Catalog().Databases(ctx)
	if err != nil {
		return nil, nil, err
	}
	var rows [][]any
	if catalogMatches(cmd.GetCatalog()) {
		for _, db := range dbs {
			if like(cmd.GetDBSchemaFilterPattern(), db) && s.databaseVisible(ctx, db) {
				rows = append(rows, []any{catalogName, db})
			}
		}
	}
	return s.oneRecord(schema_ref.DBSchemas, rows)
}

func (s *Server) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.metaInfo(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.metaInfo(desc, schema_ref.Tables), nil
}

func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	var rows [][]any
	if catalogMatches(cmd.GetCatalog()) && typeMatches(cmd.GetTableTypes()) {
		defs, err := s.store.Catalog().AllTables(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range defs {
			if !like(cmd.GetDBSchemaFilterPattern(), d.DB) || !like(cmd.GetTableNameFilterPattern(), d.Name) || !s.visible(ctx, catalog.TableObject(d)) {
				continue
			}
			row := []any{catalogName, d.DB, d.Name, tableType}
			if cmd.GetIncludeSchema() {
				row = append(row, flight.SerializeSchema(tableSchema(d), s.opts.Mem))
			}
			rows = append(rows, row)
		}
	}
	if catalogMatches(cmd.GetCatalog()) && viewTypeMatches(cmd.GetTableTypes()) {
		views, err := s.viewRows(ctx, cmd) // views.go
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, views...)
	}
	sortTableRows(rows)
	return s.oneRecord(schema, rows)
}

func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.TableTypes), nil
}

func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.oneRecord(schema_ref.TableTypes, [][]any{{tableType}, {viewType}})
}

func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.PrimaryKeys), nil
}

func (s *Server) DoGetPrimaryKeys(ctx context.Context, ref flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rows [][]any
	if catalogMatches(ref.Catalog) {
		db := catalog.DefaultDatabase
		if ref.DBSchema != nil && *ref.DBSchema != "" {
			db = *ref.DBSchema
		}
		if err := s.authorize(ctx, catalog.PrivSelect, db, ref.Table); err != nil {
			return nil, nil, err
		}
		d, err := s.store.Catalog().Table(ctx, db, ref.Table)
		if err != nil {
			return nil, nil, err
		}
		for i, col := range d.PrimaryKey {
			rows = append(rows, []any{catalogName, d.DB, d.Name, col, int32(i + 1), "pk_" + d.Name})
		}
	}
	return s.oneRecord(schema_ref.PrimaryKeys, rows)
}

func catalogMatches(c *string) bool { return c == nil || *c == "" || *c == catalogName }

func typeMatches(types []string) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if strings.EqualFold(t, tableType) {
			return true
		}
	}
	return false
}

// like matches s against a SQL LIKE pattern (% and _, no escapes); a nil
// or empty pattern matches everything.
func like(pattern *string, s string) bool {
	if pattern == nil || *pattern == "" {
		return true
	}
	var b strings.Builder
	b.WriteString("^")
	for _, r := range *pattern {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(s)
}

// buildRecord builds a record from rows of Go values (nil = null), for the
// small metadata results.
func buildRecord(s *Server, schema *arrow.Schema, rows [][]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(s.opts.Mem, schema)
	defer b.Release()
	for _, row := range rows {
		for i, v := range row {
			if err := appendValue(b.Field(i), v); err != nil {
				return nil, fmt.Errorf("metadata column %s: %w", schema.Field(i).Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendValue(fb array.Builder, v any) error {
	if v == nil {
		fb.AppendNull()
		return nil
	}
	switch b := fb.(type) {
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.ListBuilder:
		b.Append(true)
		for _, e := range v.([]string) {
			b.ValueBuilder().(*array.StringBuilder).Append(e)
		}
	default:
		return fmt.Errorf("unsupported builder %T", fb)
	}
	return nil
}
