package flightsrv

import (
	"context"
	"errors"
	"fmt"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/planner/duck"
)

// execCatalogDDL runs the DDL that needs the query engine: CREATE TABLE
// ... AS, CREATE VIEW (both check their query with it) and DROP VIEW, and
// the user DDL, which package auth applies. ok
// is false for the rest, which tables.Store.Exec applies.
func (s *Server) execCatalogDDL(ctx context.Context, stmt catalog.Statement) (int64, bool, error) {
	if ok, err := s.execUserDDL(ctx, stmt); ok { // auth.go
		return 0, true, err
	}
	switch st := stmt.(type) {
	case *catalog.CreateTable:
		if st.AsQuery == "" {
			return 0, false, nil
		}
		n, err := s.execCreateTableAs(ctx, st)
		return n, true, err
	case *catalog.CreateView:
		return 0, true, s.execCreateView(ctx, st)
	case *catalog.DropView:
		_, err := s.store.Catalog().Exec(ctx, st)
		return 0, true, err
	}
	return 0, false, nil
}

// execCreateTableAs runs CREATE TABLE t [(PRIMARY KEY ...)] [WITH ...] AS
// query: the table takes the query's column names and types, and its rows
// are written as an INSERT's are (execInsert: one atomic write per
// MaxWriteBytes). If the query or the write fails, the table is dropped
// again: no table is left behind. It returns the rows written.
func (s *Server) execCreateTableAs(ctx context.Context, ct *catalog.CreateTable) (int64, error) {
	if s.engine == nil {
		return 0, fmt.Errorf("%w: CREATE TABLE ... AS needs the query engine", errUnsupported)
	}
	if ct.IfNotExists {
		if _, err := s.store.Get(ctx, ct.Table.DB, ct.Table.Name); err == nil {
			return 0, nil
		}
	}
	schema, params, err := s.engine.Describe(ctx, ct.AsQuery)
	if err != nil {
		return 0, err
	}
	if schema == nil || (params != nil && params.NumFields() > 0) {
		return 0, fmt.Errorf("%w: the query of CREATE TABLE ... AS cannot have parameters", errInvalid)
	}
	cols, err := catalog.ColumnsFromArrow(schema)
	if err != nil {
		return 0, fmt.Errorf("create table %s: the query's columns: %w", ct.Table, err)
	}
	def := *ct
	def.Columns, def.AsQuery, def.IfNotExists = cols, "", false
	if err := s.store.Exec(ctx, &def); err != nil {
		return 0, err
	}
	if err := s.recordOwner(ctx, ct.Table); err != nil { // before the INSERT, which needs the owner's privilege
		return 0, err
	}
	n, err := s.execInsert(ctx, &planner.Insert{DB: ct.Table.DB, Table: ct.Table.Name, Source: ct.AsQuery}, nil)
	if err != nil {
		drop := &catalog.DropTable{Table: ct.Table}
		if derr := s.store.Exec(context.WithoutCancel(ctx), drop); derr != nil {
			return 0, errors.Join(err, fmt.Errorf("drop the table again: %w", derr))
		}
		return 0, err
	}
	return n, nil
}

// execCreateView checks a view's query with the engine (one SELECT, no
// parameters, every name it reads resolves) and stores the view. A view
// that would refer to itself, through others or directly (CREATE OR
// REPLACE VIEW v AS SELECT * FROM v), is put back as it was.
func (s *Server) execCreateView(ctx context.Context, cv *catalog.CreateView) error {
	if s.engine == nil {
		return fmt.Errorf("%w: views need the query engine", errUnsupported)
	}
	cat := s.store.Catalog()
	if cv.IfNotExists {
		if _, err := cat.View(ctx, cv.View.DB, cv.View.Name); err == nil {
			return nil
		}
	}
	schema, params, err := s.engine.Describe(ctx, cv.Query)
	if err != nil {
		return err
	}
	if schema == nil || (params != nil && params.NumFields() > 0) {
		return fmt.Errorf("%w: the query of a view cannot have parameters", errInvalid)
	}
	old, _ := cat.View(ctx, cv.View.DB, cv.View.Name)
	res, err := cat.Exec(ctx, cv)
	if err != nil || res.NoOp {
		return err
	}
	ref := catalog.TableName{DB: res.View.DB, Name: res.View.Name}.String()
	if _, _, err := s.engine.Describe(ctx, "SELECT * FROM "+ref); errors.Is(err, duck.ErrViewDepth) {
		undo := context.WithoutCancel(ctx)
		var uerr error
		if old != nil {
			_, uerr = cat.Exec(undo, &catalog.CreateView{View: cv.View, OrReplace: true, Query: old.Query})
		} else {
			_, uerr = cat.DropView(undo, res.View.DB, res.View.Name, true)
		}
		return errors.Join(fmt.Errorf("%w: view %s would refer to itself", errInvalid, res.View.FullName()), uerr)
	}
	return nil
}
