package flightsrv

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/status"

	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// DoPutCommandStatementIngest is ADBC's bulk ingest. The modes map to table
// definition options: create (create, fail if it exists), append (fail if
// missing), replace (drop and create) and create_append.
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	if cmd.GetTemporary() {
		return 0, fmt.Errorf("%w: temporary tables", errUnsupported)
	}
	if len(cmd.GetTransactionId()) > 0 {
		return 0, fmt.Errorf("%w: transactions; every ingest is atomic on its own", errUnsupported)
	}
	if c := cmd.GetCatalog(); c != "" && c != catalogName {
		return 0, fmt.Errorf("%w: catalog %q (the only catalog is %q)", errInvalid, c, catalogName)
	}
	db, name := cmd.GetSchema(), cmd.GetTable()
	if name == "" {
		return 0, fmt.Errorf("%w: ingest names no table", errInvalid)
	}
	if _, _, err := writerOf(ctx); err != nil {
		return 0, err // before a table is created for it
	}
	t, created, err := s.ingestTarget(ctx, db, name, cmd.GetTableDefinitionOptions(), rdr.Schema())
	if err != nil {
		return 0, err
	}
	n, err := s.ingest(ctx, t, rdr)
	if err != nil && created {
		s.dropCreated(ctx, t.Def().DB, t.Def().Name)
		n = 0
	}
	return n, err
}

// ingestTarget resolves, creates or replaces the table per the options;
// created says that the ingest made the table.
func (s *Server) ingestTarget(ctx context.Context, db, name string, o *flightsql.TableDefinitionOptions, schema *arrow.Schema) (*tables.Table, bool, error) {
	ifNotExist := flightsql.TableDefinitionOptionsTableNotExistOptionFail
	ifExists := flightsql.TableDefinitionOptionsTableExistsOptionAppend
	if o != nil {
		if o.IfNotExist != flightsql.TableDefinitionOptionsTableNotExistOptionUnspecified {
			ifNotExist = o.IfNotExist
		}
		if o.IfExists != flightsql.TableDefinitionOptionsTableExistsOptionUnspecified {
			ifExists = o.IfExists
		}
	}
	schema = storageSchema(schema)
	t, err := s.store.Get(ctx, db, name)
	create := errors.Is(err, catalog.ErrTableNotFound) && ifNotExist == flightsql.TableDefinitionOptionsTableNotExistOptionCreate
	replace := err == nil && ifExists == flightsql.TableDefinitionOptionsTableExistsOptionReplace
	if err := s.authorizeIngest(ctx, db, name, create, replace); err != nil { // authorize.go
		return nil, false, err
	}
	switch {
	case err == nil && ifExists == flightsql.TableDefinitionOptionsTableExistsOptionFail:
		return nil, false, fmt.Errorf("ingest into %q: %w", name, catalog.ErrTableExists)
	case err == nil && ifExists == flightsql.TableDefinitionOptionsTableExistsOptionReplace:
		// Check the new definition before dropping the old table.
		if _, err := catalog.ColumnsFromArrow(schema); err != nil {
			return nil, false, fmt.Errorf("replace %q with the ingested schema: %w", name, err)
		}
		if err := s.store.Exec(ctx, &catalog.DropTable{Table: catalog.TableName{DB: db, Name: name}}); err != nil {
			return nil, false, err
		}
		t, err := s.createFromSchema(ctx, db, name, schema)
		return t, err == nil, err
	case err == nil:
		return t, false, nil
	case errors.Is(err, catalog.ErrTableNotFound) && ifNotExist == flightsql.TableDefinitionOptionsTableNotExistOptionCreate:
		t, err := s.createFromSchema(ctx, db, name, schema)
		return t, err == nil, err
	}
	return nil, false, err
}

func (s *Server) createFromSchema(ctx context.Context, db, name string, schema *arrow.Schema) (*tables.Table, error) {
	cols, err := catalog.ColumnsFromArrow(schema)
	if err != nil {
		return nil, fmt.Errorf("create %q from the ingested schema: %w", name, err)
	}
	stmt := &catalog.CreateTable{Table: catalog.TableName{DB: db, Name: name}, Columns: cols}
	if err := s.store.Exec(ctx, stmt); err != nil {
		return nil, err
	}
	if err := s.recordOwner(ctx, stmt.Table); err != nil {
		return nil, err
	}
	return s.store.Get(ctx, db, name)
}

// ingest reads the stream into the table's appender, which checks each
// record against the table and writes them in atomic writes of up to
// MaxWriteBytes. An ingest that fits one write (256 MiB by default) is all
// or nothing; a larger one commits part by part, and an error leaves the
// parts written before it. An ingest with the writer headers is one
// idempotent call, which must fit one write (writer.go).
func (s *Server) ingest(ctx context.Context, t *tables.Table, rdr interface {
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}) (int64, error) {
	a, err := newAppender(ctx, t)
	if err != nil {
		return 0, err
	}
	defer a.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if sent, ok := sentOf(ctx, rec); ok {
			err = a.AddSent(ctx, rec, sent) // compressed: stored as sent when it fits (docs/flight.md)
		} else {
			err = a.Add(ctx, rec)
		}
		if err != nil {
			return a.Written(), err
		}
	}
	if err := rdr.Err(); err != nil {
		if _, ok := status.FromError(err); ok {
			return a.Written(), err // the checked stream's refusal, with its code
		}
		return a.Written(), fmt.Errorf("%w: reading the ingest stream: %v", errInvalid, err)
	}
	err = a.Flush(ctx)
	return a.Written(), err
}

// doPutPath is a plain Flight DoPut for pyarrow.flight users: the
// descriptor path is [db, table] or [table], the table must exist, and the
// stream's rows are appended. The reply is one PutResult whose app
// metadata is the row count as a decimal string.
func (s *Server) doPutPath(cs *checkedStream, path []string) error {
	ctx := cs.Context()
	db, name, err := pathTable(path)
	if err != nil {
		return err
	}
	t, err := s.table(ctx, catalog.PrivInsert, db, name)
	if err != nil {
		return err
	}
	rdr, err := flight.NewRecordReader(cs, ipc.WithAllocator(s.opts.Mem))
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	defer rdr.Release()
	n, err := s.ingest(ctx, t, rdr)
	if err != nil {
		return err
	}
	return cs.Send(&flight.PutResult{AppMetadata: fmt.Appendf(nil, "%d", n)})
}
