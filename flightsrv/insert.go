package flightsrv

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// execInsert runs INSERT INTO t ... : DuckDB evaluates the source, cast to
// the target columns' types, and the rows are written to the log as one
// atomic write per MaxWriteBytes. Each row of argRows is one execution of
// the statement (a prepared INSERT bound to several parameter rows); a nil
// argRows runs it once without parameters. It returns the rows written.
func (s *Server) execInsert(ctx context.Context, ins *planner.Insert, argRows [][]any) (int64, error) {
	if s.engine == nil {
		return 0, fmt.Errorf("%w: INSERT needs the query engine", errUnsupported)
	}
	t, err := s.store.Get(ctx, ins.DB, ins.Table)
	if err != nil {
		return 0, err
	}
	target, err := insertTarget(t.Def(), ins.Columns)
	if err != nil {
		return 0, err
	}
	query, err := ins.SourceQuery(target)
	if err != nil {
		return 0, err
	}
	if argRows == nil {
		argRows = [][]any{nil}
	}
	w := &batchWriter{t: t, ctx: ctx}
	defer w.release()
	for _, args := range argRows {
		if err := s.insertRows(ctx, w, query, len(target), args); err != nil {
			return 0, err
		}
	}
	return w.finish()
}

func (s *Server) insertRows(ctx context.Context, w *batchWriter, query string, ncols int, args []any) error {
	rs, schema, err := s.engine.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	if schema.NumFields() != ncols {
		return fmt.Errorf("%w: INSERT source has %d columns, the target %d", errInvalid, schema.NumFields(), ncols)
	}
	for {
		rec, err := rs.Next()
		if err == errEOF {
			return nil
		}
		if err != nil {
			return err
		}
		err = w.add(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}

// insertTarget resolves the column list of an INSERT.
func insertTarget(def *catalog.Table, names []string) ([]catalog.Column, error) {
	if names == nil {
		return def.Columns, nil
	}
	seen := map[int]bool{}
	out := make([]catalog.Column, len(names))
	for i, n := range names {
		c := columnIndexFold(def, n)
		if c < 0 {
			return nil, fmt.Errorf("%w: column %q not found in table %s", errInvalid, n, def.FullName())
		}
		if seen[c] {
			return nil, fmt.Errorf("%w: column %q listed twice", errInvalid, n)
		}
		seen[c] = true
		out[i] = def.Columns[c]
	}
	return out, nil
}

// batchWriter conforms records to a table and writes them in atomic writes
// of up to the table's MaxWriteBytes.
type batchWriter struct {
	t       *tables.Table
	ctx     context.Context
	pending []arrow.RecordBatch
	size    int64
	total   int64
}

func (w *batchWriter) add(rec arrow.RecordBatch) error {
	c, err := w.t.Conform(rec)
	if err != nil {
		return err
	}
	w.pending = append(w.pending, c)
	w.size += recordBytes(c)
	if w.size >= w.t.Limits().MaxWriteBytes {
		return w.flush()
	}
	return nil
}

func (w *batchWriter) flush() error {
	n, err := w.t.Write(w.ctx, w.pending)
	w.release()
	w.total += n
	return err
}

// finish writes what is pending and returns the rows written in all.
func (w *batchWriter) finish() (int64, error) {
	if err := w.flush(); err != nil {
		return w.total, err
	}
	return w.total, nil
}

func (w *batchWriter) release() {
	for _, r := range w.pending {
		r.Release()
	}
	w.pending, w.size = w.pending[:0], 0
}
