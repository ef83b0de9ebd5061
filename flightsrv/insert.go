package flightsrv

import (
	"context"
	"fmt"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/planner"
	"github.com/lakestream/lakestream/tables"
)

// execInsert runs INSERT INTO t ... : DuckDB evaluates the source, cast to
// the target columns' types, and the rows are written through the table's
// appender (one atomic write per MaxWriteBytes). Each row of argRows is one execution of
// the statement (a prepared INSERT bound to several parameter rows); a nil
// argRows runs it once without parameters. It returns the rows written.
// With the writer headers the statement is one idempotent call, every
// execution of it included (writer.go).
func (s *Server) execInsert(ctx context.Context, ins *planner.Insert, argRows [][]any) (int64, error) {
	if s.engine == nil {
		return 0, fmt.Errorf("%w: INSERT needs the query engine", errUnsupported)
	}
	t, err := s.table(ctx, catalog.PrivInsert, ins.DB, ins.Table)
	if err != nil {
		return 0, err
	}
	a, err := newAppender(ctx, t)
	if err != nil {
		return 0, err
	}
	defer a.Release()
	target, err := insertTarget(a.Def(), ins.Columns)
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
	for _, args := range argRows {
		if err := s.insertRows(ctx, a, query, len(target), args); err != nil {
			return a.Written(), err
		}
	}
	err = a.Flush(ctx)
	return a.Written(), err
}

func (s *Server) insertRows(ctx context.Context, a *tables.Appender, query string, ncols int, args []any) error {
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
		err = a.Add(ctx, rec)
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
		c := def.ColumnIndexFold(n)
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
