package flightsrv

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// DELETE and UPDATE of primary-key tables (planner/dml.go): the engine
// runs the statement's source query over the table's current state and
// the table applies what it selected in one write: the keys to delete
// (Table.Delete) or the new whole rows (Table.Overwrite). The selection
// is read to its end before the write starts, so the statement never
// reads its own changes. Between the two a concurrent write of the same
// keys may land; the statement's write then wins (last writer wins, as
// for any two writes of a key: an UPDATE of a row deleted in between
// writes it again, as Overwrite does for a key without a row).

// execDelete runs a DELETE once per argument row (nil: once, without
// parameters) and returns how many rows it deleted.
func (s *Server) execDelete(ctx context.Context, d *planner.Delete, argRows [][]any) (int64, error) {
	t, query, err := s.dmlSource(ctx, d.DB, d.Table, func(t *tables.Table) (string, error) { return d.KeyQuery(t.Def()) })
	if err != nil {
		return 0, err
	}
	return s.applyEach(ctx, query, argRows, func(rec arrow.RecordBatch) (int64, error) { return t.Delete(ctx, rec) })
}

// execUpdateRows runs an UPDATE once per argument row and returns how many
// rows it changed.
func (s *Server) execUpdateRows(ctx context.Context, u *planner.Update, argRows [][]any) (int64, error) {
	t, query, err := s.dmlSource(ctx, u.DB, u.Table, func(t *tables.Table) (string, error) { return u.RowQuery(t.Def()) })
	if err != nil {
		return 0, err
	}
	return s.applyEach(ctx, query, argRows, func(rec arrow.RecordBatch) (int64, error) { return t.Overwrite(ctx, rec) })
}

// dmlSource finds the table of a DELETE or UPDATE and its source query.
func (s *Server) dmlSource(ctx context.Context, db, name string, query func(*tables.Table) (string, error)) (*tables.Table, string, error) {
	if s.engine == nil {
		return nil, "", fmt.Errorf("%w: DELETE and UPDATE need the query engine", errUnsupported)
	}
	t, err := s.store.Get(ctx, db, name)
	if err != nil {
		return nil, "", err
	}
	q, err := query(t)
	return t, q, err
}

func (s *Server) applyEach(ctx context.Context, query string, argRows [][]any, apply func(arrow.RecordBatch) (int64, error)) (int64, error) {
	if argRows == nil {
		argRows = [][]any{nil}
	}
	var n int64
	for _, args := range argRows {
		rec, err := s.selectAll(ctx, query, args)
		if err != nil {
			return n, err
		}
		if rec.NumRows() > 0 {
			var k int64
			k, err = apply(rec)
			n += k
		}
		rec.Release()
		if err != nil {
			return n, err
		}
	}
	return n, nil
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
		_, q, err = s.dmlSource(ctx, st.Delete.DB, st.Delete.Table, func(t *tables.Table) (string, error) { return st.Delete.KeyQuery(t.Def()) })
	default:
		_, q, err = s.dmlSource(ctx, st.Update.DB, st.Update.Table, func(t *tables.Table) (string, error) { return st.Update.RowQuery(t.Def()) })
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
