package flightsrv

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// DELETE and UPDATE of primary-key tables (planner/dml.go): the engine
// runs the statement's source query over the table's current state and
// the table applies what it selected in one write: the keys to delete
// (Table.DeleteSince) or the new whole rows (Table.OverwriteSince). The
// selection is read to its end before the write starts, so the statement
// never reads its own changes. The write is conditional on the state
// taken before the query: should a concurrent write change one of the
// selected rows in between (or delete a row an UPDATE computed from), the
// write is refused whole and the statement runs again, reading the newer
// rows, up to dmlAttempts times (then Aborted: try again). So an UPDATE
// never loses a concurrent update (`SET n = n + 1` from two clients adds
// 2), and a DELETE deletes only rows it saw.

// dmlAttempts bounds the runs of one DELETE or UPDATE whose rows keep
// changing under it.
const dmlAttempts = 16

// execDelete runs a DELETE once per argument row (nil: once, without
// parameters) and returns how many rows it deleted.
func (s *Server) execDelete(ctx context.Context, d *planner.Delete, argRows [][]any) (int64, error) {
	t, query, err := s.dmlSource(ctx, catalog.PrivDelete, d.DB, d.Table, func(t *tables.Table) (string, error) { return d.KeyQuery(t.Def()) })
	if err != nil {
		return 0, err
	}
	return s.applyEach(ctx, t, query, argRows, func(rec arrow.RecordBatch, since tables.PKState) (int64, error) {
		return t.DeleteSince(ctx, rec, since)
	})
}

// execUpdateRows runs an UPDATE once per argument row and returns how many
// rows it changed.
func (s *Server) execUpdateRows(ctx context.Context, u *planner.Update, argRows [][]any) (int64, error) {
	t, query, err := s.dmlSource(ctx, catalog.PrivUpdate, u.DB, u.Table, func(t *tables.Table) (string, error) { return u.RowQuery(t.Def()) })
	if err != nil {
		return 0, err
	}
	return s.applyEach(ctx, t, query, argRows, func(rec arrow.RecordBatch, since tables.PKState) (int64, error) {
		return t.OverwriteSince(ctx, rec, since)
	})
}

// dmlSource finds the table of a DELETE or UPDATE and its source query.
func (s *Server) dmlSource(ctx context.Context, priv catalog.Privilege, db, name string, query func(*tables.Table) (string, error)) (*tables.Table, string, error) {
	if s.engine == nil {
		return nil, "", fmt.Errorf("%w: DELETE and UPDATE need the query engine", errUnsupported)
	}
	t, err := s.table(ctx, priv, db, name)
	if err != nil {
		return nil, "", err
	}
	q, err := query(t)
	return t, q, err
}

func (s *Server) applyEach(ctx context.Context, t *tables.Table, query string, argRows [][]any, apply func(arrow.RecordBatch, tables.PKState) (int64, error)) (int64, error) {
	if argRows == nil {
		argRows = [][]any{nil}
	}
	var n int64
	for _, args := range argRows {
		k, err := s.applyOnce(ctx, t, query, args, apply)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// applyOnce runs one execution of a DELETE or UPDATE: select, then the
// conditional write, again while concurrent writes conflict.
func (s *Server) applyOnce(ctx context.Context, t *tables.Table, query string, args []any, apply func(arrow.RecordBatch, tables.PKState) (int64, error)) (int64, error) {
	for attempt := 1; ; attempt++ {
		since, _ := t.PKState()
		rec, err := s.selectAll(ctx, query, args)
		if err != nil {
			return 0, err
		}
		if bs := tables.BucketsOf(ctx); bs != nil {
			// A bucket leader's part in a cluster (dml_cluster.go).
			only, err := t.OnlyBuckets(rec, bs)
			rec.Release()
			if err != nil {
				return 0, err
			}
			rec = only
		}
		var k int64
		if rec.NumRows() > 0 {
			k, err = apply(rec, since)
		}
		rec.Release()
		if !errors.Is(err, tables.ErrWriteConflict) {
			return k, err
		}
		if attempt == dmlAttempts {
			return 0, fmt.Errorf("%w: %d attempts", err, attempt)
		}
	}
}

// selectAll runs query and returns all its rows as one record.
func (s *Server) selectAll(ctx context.Context, query string, args []any) (arrow.RecordBatch, error) {
	rs, schema, err := s.engine.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for {
		rec, err := rs.Next()
		if err == errEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return concatRecords(s, schema, recs)
}

// concatRecords joins records of one schema into one.
func concatRecords(s *Server, schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		if len(parts) == 0 {
			b := array.NewBuilder(s.opts.Mem, schema.Field(i).Type)
			cols[i] = b.NewArray()
			b.Release()
			continue
		}
		c, err := array.Concatenate(parts, s.opts.Mem)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// describeDML returns no result columns and the parameters of the
// statement's source query.
func (s *Server) describeDML(ctx context.Context, st *planner.Statement) (*arrow.Schema, *arrow.Schema, error) {
	var q string
	var err error
	switch st.Kind {
	case planner.KindDelete:
		_, q, err = s.dmlSource(ctx, catalog.PrivDelete, st.Delete.DB, st.Delete.Table, func(t *tables.Table) (string, error) { return st.Delete.KeyQuery(t.Def()) })
	default:
		_, q, err = s.dmlSource(ctx, catalog.PrivUpdate, st.Update.DB, st.Update.Table, func(t *tables.Table) (string, error) { return st.Update.RowQuery(t.Def()) })
	}
	if err != nil {
		return nil, nil, err
	}
	_, params, err := s.engine.Describe(ctx, q)
	if params == nil {
		params = emptySchema
	}
	return emptySchema, params, err
}

// scanRows is the row count a scan's FlightInfo announces: rows, the
// capture's, for a log table; unknown (-1) for a primary-key table, whose
// scan reads each bucket's state as it is at DoGet (tables.Table.ReadRange
// streams a PK bucket's live rows, not its changelog batches), so a count
// taken at planning could differ from the rows sent.
func scanRows(r *plainScan, rows int64) int64 {
	if r.layer == tables.LayerTable && r.def.HasPrimaryKey() {
		return -1
	}
	return rows
}
