package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
)

// SHOW and DESCRIBE are answered from the catalog, in the shapes DuckDB
// gives its own (docs/sql.md, "SHOW and DESCRIBE"): SHOW DATABASES
// database_name; SHOW TABLES name; DESCRIBE column_name, column_type,
// null, key, default, extra. SHOW CREATE TABLE / VIEW, which DuckDB does
// not have, answers name and sql (as duckdb_tables() and duckdb_views()
// name the statement). Views and queries are described by the engine.

func utf8Schema(names ...string) *arrow.Schema {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

var (
	showDatabasesSchema = utf8Schema("database_name")
	showTablesSchema    = utf8Schema("name")
	describeSchema      = utf8Schema("column_name", "column_type", "null", "key", "default", "extra")
	showCreateSchema    = utf8Schema("name", "sql")
	showGrantsSchema    = utf8Schema(auth.GrantColumns...)
	showAPIKeysSchema   = utf8Schema(auth.APIKeyColumns...)
)

func showSchema(sh *planner.Show) *arrow.Schema {
	switch sh.What {
	case planner.ShowDatabases:
		return showDatabasesSchema
	case planner.ShowTables:
		return showTablesSchema
	case planner.ShowCreateTable, planner.ShowCreateView:
		return showCreateSchema
	case planner.ShowGrants:
		return showGrantsSchema
	case planner.ShowAPIKeys:
		return showAPIKeysSchema
	}
	return describeSchema
}

// showInfo plans a SHOW: its rows are built now, so that an unknown name
// fails here, and again at DoGet from the ticket, which carries the text.
func (s *Server) showInfo(ctx context.Context, st *planner.Statement, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	rows, err := s.showRows(ctx, st.Show)
	if err != nil {
		return nil, err
	}
	ep, err := s.endpoint(ctx, &ticket{Kind: "show", SQL: st.SQL})
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(showSchema(st.Show), s.opts.Mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{ep},
		TotalRecords:     int64(len(rows)),
		TotalBytes:       -1,
	}, nil
}

// streamShow answers a "show" ticket.
func (s *Server) streamShow(ctx context.Context, sql string, stream flight.DataStreamWriter) error {
	st, err := planner.Classify(sql)
	if err != nil {
		return err
	}
	if st.Kind != planner.KindShow {
		return fmt.Errorf("%w: show ticket of a %s statement", errInvalid, st.Kind)
	}
	rows, err := s.showRows(ctx, st.Show)
	if err != nil {
		return err
	}
	schema := showSchema(st.Show)
	rec, err := buildRecord(s, schema, rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	w := newRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.opts.Mem))
	defer w.Close()
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Close()
}

// showRows is the answer of a SHOW or DESCRIBE, one []any per row.
func (s *Server) showRows(ctx context.Context, sh *planner.Show) ([][]any, error) {
	cat := s.store.Catalog()
	switch sh.What {
	case planner.ShowGrants:
		return s.showGrants(ctx, sh.Name) // authorize.go
	case planner.ShowAPIKeys:
		return s.showAPIKeys(ctx) // apikeys.go
	case planner.ShowCreateTable, planner.ShowCreateView, planner.ShowDescribe:
		if err := s.authorize(ctx, catalog.PrivSelect, sh.DB, sh.Name); err != nil {
			return nil, err
		}
	}
	switch sh.What {
	case planner.ShowDatabases:
		dbs, err := cat.Databases(ctx)
		if err != nil {
			return nil, err
		}
		rows := make([][]any, 0, len(dbs))
		for _, db := range dbs {
			if s.databaseVisible(ctx, db) { // authorize.go: as GetDbSchemas
				rows = append(rows, []any{db})
			}
		}
		return rows, nil
	case planner.ShowTables:
		return s.showTables(ctx, sh.DB)
	case planner.ShowCreateTable:
		if v, err := cat.View(ctx, sh.DB, sh.Name); err == nil {
			return nil, fmt.Errorf("%w: %q is a view: use SHOW CREATE VIEW", errInvalid, v.FullName())
		}
		def, err := cat.Table(ctx, sh.DB, sh.Name)
		if err != nil {
			return nil, err
		}
		return [][]any{{def.FullName(), def.DDL()}}, nil
	case planner.ShowCreateView:
		v, err := cat.View(ctx, sh.DB, sh.Name)
		if err != nil {
			if _, terr := cat.Table(ctx, sh.DB, sh.Name); terr == nil {
				return nil, fmt.Errorf("%w: %q is a table: use SHOW CREATE TABLE", errInvalid, dbOrDefault(sh.DB)+"."+sh.Name)
			}
			return nil, err
		}
		return [][]any{{v.FullName(), v.DDL()}}, nil
	case planner.ShowDescribeQuery:
		return s.describeQuery(ctx, sh.Query)
	}
	return s.describeName(ctx, sh.DB, sh.Name)
}

// showTables lists the tables and views of db (default: the default
// database), by name.
func (s *Server) showTables(ctx context.Context, db string) ([][]any, error) {
	cat := s.store.Catalog()
	defs, err := cat.Tables(ctx, db)
	if err != nil {
		return nil, err
	}
	views, err := cat.Views(ctx, dbOrDefault(db))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(defs)+len(views))
	for _, d := range defs {
		if s.visible(ctx, catalog.TableObject(d)) {
			names = append(names, d.Name)
		}
	}
	for _, v := range views {
		if s.visible(ctx, catalog.ViewObject(v)) {
			names = append(names, v.Name)
		}
	}
	sort.Strings(names)
	rows := make([][]any, len(names))
	for i, n := range names {
		rows[i] = []any{n}
	}
	return rows, nil
}

// describeName describes a table from its definition (with its NOT NULL
// and primary key), anything else the engine can read (a view, "t$lake",
// "t$changelog", lakestream.tiering) from the engine's result schema.
func (s *Server) describeName(ctx context.Context, db, name string) ([][]any, error) {
	if def, err := s.store.Catalog().Table(ctx, db, name); err == nil {
		pk := make(map[string]bool, len(def.PrimaryKey))
		for _, c := range def.PrimaryKey {
			pk[c] = true
		}
		rows := make([][]any, len(def.Columns))
		for i, c := range def.Columns {
			rows[i] = []any{c.Name, catalog.TypeString(c.Type), yesNo(!c.NotNull), nil, nil, nil}
			if pk[c.Name] {
				rows[i][3] = "PRI"
			}
		}
		return rows, nil
	} else if !errors.Is(err, catalog.ErrTableNotFound) {
		return nil, err
	}
	ref := catalog.TableName{DB: db, Name: name}.String()
	if db == "" {
		ref = catalog.QuoteIdent(name)
	}
	return s.describeQuery(ctx, "SELECT * FROM "+ref)
}

// describeQuery describes a query's result columns, as DuckDB's DESCRIBE
// of a query does: every column nullable, no key.
func (s *Server) describeQuery(ctx context.Context, query string) ([][]any, error) {
	if s.engine == nil {
		return nil, fmt.Errorf("%w: describing a query needs the query engine", errUnsupported)
	}
	schema, _, err := s.engine.Describe(ctx, query)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, fmt.Errorf("%w: the result's columns depend on the types of its parameters", errInvalid)
	}
	rows := make([][]any, schema.NumFields())
	for i, f := range schema.Fields() {
		typ := f.Type.String()
		if t, err := catalog.TypeFromArrow(f.Type); err == nil {
			typ = catalog.TypeString(t)
		}
		rows[i] = []any{f.Name, typ, "YES", nil, nil, nil}
	}
	return rows, nil
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func dbOrDefault(db string) string {
	if db == "" {
		return catalog.DefaultDatabase
	}
	return db
}
